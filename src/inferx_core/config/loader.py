"""Load RunConfig / SweepConfig from YAML or JSON with errors a person can act on.

Every error names the file, the line where YAML knows it, the field path
(``workload.isl``), what was wrong and what is allowed.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from inferx_core.config.models import BenchConfig, RunConfig, is_bench, is_sweep
from inferx_core.config.parsing import ParseError, loads_json, loads_yaml, read_bounded
from inferx_core.config.points import PointIdError, checked_id, point_ids, slug
from inferx_core.config.sweep import SweepConfig
from inferx_core.errors import UserFacingError


class ConfigError(UserFacingError, ValueError):
    """A config file that cannot be used; ``str()`` is the message for the user."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = Path(path)
        self.problems = problems
        body = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid config {path}:\n{body}")


def _yaml_positions(root: Any) -> dict[tuple[Any, ...], int]:
    """Map each key path of a composed YAML document to its 1-based line number.

    Iterative; the composer has bounded the nesting and the values aliases expand to.
    """
    import yaml

    positions: dict[tuple[Any, ...], int] = {}
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())] if root is not None else []
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key_path = (*path, key_node.value)
                positions[key_path] = key_node.start_mark.line + 1
                stack.append((value_node, key_path))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                positions[(*path, i)] = item.start_mark.line + 1
                stack.append((item, (*path, i)))
    return positions


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model found at ``loc`` (for "allowed keys" hints)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        annotation = field.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
        if current is None:
            return []
    return sorted(getattr(current, "model_fields", {}))


def format_validation_error(
    exc: ValidationError, model: type[BaseModel], positions: dict[tuple[Any, ...], int]
) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = ".".join(str(p) for p in loc) or "(top level)"
        line = positions.get(loc)
        where = f"line {line}, " if line else ""
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = _allowed_keys(model, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown key{hint} Allowed here: {', '.join(allowed)}"
        elif err["type"] == "missing":
            message = "required field is missing"
        else:
            given = err.get("input")
            if not isinstance(given, dict | list):
                message = f"{message} (got {given!r})"
        problems.append(f"{where}{path}: {message}")
    return problems


def _parse_data(text: str, path: Path) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """The file's data and, for YAML, the line of each key path."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            # NaN/Infinity stay allowed: YAML configs have .nan/.inf; the models decide.
            return loads_json(text, finite=False, unique_keys=True), {}
        if suffix in (".yaml", ".yml"):
            data, root = loads_yaml(text)
            return data, _yaml_positions(root)
    except ParseError as exc:
        raise ConfigError(path, [str(exc)]) from None
    raise ConfigError(path, [f"unknown config format {suffix!r}; use .yaml, .yml or .json"])


def parse_config_text(
    text: str, path: Path | str, overlay: Callable[[Any], Any] | None = None
) -> RunConfig | SweepConfig | BenchConfig:
    """``overlay``: lays command-line flags into the data before it is validated."""
    path = Path(path)
    data, positions = _parse_data(text, path)
    if overlay is not None and isinstance(data, dict):
        overlay(data)
    if data is None:
        raise ConfigError(path, ["file is empty; a minimal config is `engine: vllm` + `model: ID`"])
    if not isinstance(data, dict):
        raise ConfigError(path, ["top level must be a mapping of keys (engine:, model:, ...)"])
    model: type[RunConfig] | type[SweepConfig] | type[BenchConfig] = (
        SweepConfig if is_sweep(data) else BenchConfig if is_bench(data) else RunConfig
    )
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(path, format_validation_error(exc, model, positions)) from None
    try:
        _check_ids(config)
    except PointIdError as exc:  # ids name files: one too long is this file's to fix
        raise ConfigError(path, [str(exc)]) from None
    return config


def _check_ids(config: RunConfig | SweepConfig | BenchConfig) -> None:
    """Every point id the config makes fits in a file name (:class:`PointIdError`)."""
    if isinstance(config, BenchConfig):  # its ids start with the name or the model's last part
        model = config.model.rstrip("/").rsplit("/", 1)[-1] if config.model else None
        for value in (config.name, model):
            if value:
                checked_id(slug(value))
        return
    if isinstance(config, RunConfig):
        point_ids(config)
        return
    try:
        runs = config.expand()
    except PointIdError:
        raise
    except UserFacingError:
        return  # a sweep that cannot expand says why where it is expanded
    for run in runs:
        point_ids(run)


#: A config is a few kilobytes; this bounds what one can make the loader read.
MAX_CONFIG_BYTES = 1 << 20


def load_config(
    path: Path | str, overlay: Callable[[Any], Any] | None = None
) -> RunConfig | SweepConfig | BenchConfig:
    """Read a run, sweep (top-level ``base:``) or bench (``base_url:``, no engine) config
    (``overlay``: see :func:`parse_config_text`)."""
    path = Path(path)
    try:
        text = read_bounded(path, MAX_CONFIG_BYTES, "config")
    except OSError as exc:
        raise ConfigError(path, [f"cannot read file: {exc.strerror or exc}"]) from exc
    except ParseError as exc:
        raise ConfigError(path, [str(exc)]) from None
    return parse_config_text(text, path, overlay)


def load_run_configs(path: Path | str) -> list[RunConfig]:
    """A config file as the list of server configurations it describes."""
    config = load_config(path)
    if isinstance(config, BenchConfig):
        raise UserFacingError(
            f"{path} is a bench config (base_url:); run it with `inferx bench {path}`"
        )
    return config.expand() if isinstance(config, SweepConfig) else [config]
