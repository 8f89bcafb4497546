"""Sweep matrices: expansion into server configurations, concurrency ranges, filters.

A sweep crosses a base run with axes (engines x models x precision x
parallelism x ISL/OSL scenarios); each combination is one server
configuration (one :class:`~inferx_core.config.models.RunConfig`, launched once for
all its load points) and the concurrency levels stay inside it as load
points. Concurrency is a list, a geometric range, or both (merged)::

    matrix:
      engine: [vllm, sglang]
      tp: [1, 2, 4, 8]
      precision:
        - {name: bf16, dtype: bfloat16}
        - {name: fp8, quantization: fp8, kv_cache_dtype: fp8}
      scenarios:
        - {name: chat, isl: 1024, osl: 1024}
      concurrency_range: {start: 4, stop: 256, factor: 2}   # 4, 8, ..., 256

A precision's ``quantization`` becomes the engine flag ``--quantization``
(``engine_args.quantization``; vLLM and SGLang both take it) and its name is
appended to the run name, as a scenario's is, so point ids stay readable and
unique. Two combinations that would write the same point id are an error.

The sweep models live here, above the run models they cross
(:mod:`inferx_core.config.models`) and the point ids they must keep unique
(:mod:`inferx_core.config.points`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import Field, PositiveInt, ValidationError, model_validator

from inferx_core.config.axes import ConcurrencyRange, Precision, RoleAxes, apply_role_value
from inferx_core.config.base import StrictModel
from inferx_core.config.deployment import Role
from inferx_core.config.models import RunConfig
from inferx_core.config.points import point_ids
from inferx_core.errors import UserFacingError

__all__ = [
    "Scenario",
    "SweepConfig",
    "SweepError",
    "SweepMatrix",
    "count_points",
    "expand_sweep",
    "filter_runs",
    "scenario_matches",
]


class SweepError(UserFacingError, ValueError):
    """A sweep that cannot be expanded (e.g. two combinations share a point id)."""


class Scenario(StrictModel):
    """An ISL/OSL pair with a name (InferenceX: chat 1k/1k, reasoning 1k/8k, summarize 8k/1k)."""

    name: str
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)


class SweepMatrix(StrictModel):
    """Axes to cross; each non-empty list multiplies the points."""

    engine: list[str] = Field(default_factory=list)
    model: list[str] = Field(default_factory=list)
    tp: list[PositiveInt] = Field(default_factory=list)
    dp: list[PositiveInt] = Field(default_factory=list)
    ep: list[PositiveInt] = Field(default_factory=list)
    kv_cache_dtype: list[str] = Field(default_factory=list)
    precision: list[Precision] = Field(
        default_factory=list,
        description="Precisions to cross: {name, dtype, quantization, kv_cache_dtype}",
    )
    scenarios: list[Scenario] = Field(default_factory=list)
    concurrency: list[PositiveInt] = Field(default_factory=list)
    concurrency_range: ConcurrencyRange | None = Field(
        default=None,
        description="Geometric levels {start, stop, factor: 2}; merged with concurrency",
    )
    roles: dict[Role, RoleAxes] = Field(
        default_factory=dict,
        description="Per deployment role: {decode: {replicas: [1, 2], tp: [8, 16]}}",
    )


class SweepConfig(StrictModel):
    """A base run crossed with a matrix of variations."""

    base: RunConfig
    matrix: SweepMatrix = Field(default_factory=SweepMatrix)

    @model_validator(mode="after")
    def _roles_in_base(self) -> SweepConfig:
        deployment = self.base.deployment
        for role in self.matrix.roles:
            if deployment is None:
                raise ValueError(f"matrix.roles.{role}: the base has no deployment to vary")
            if not deployment.has(role):
                have = ", ".join(g.role for g in deployment.roles)
                raise ValueError(
                    f"matrix.roles.{role}: the base deployment has no role {role} (it has {have})"
                )
        return self

    def expand(self) -> list[RunConfig]:
        """One RunConfig per server configuration x precision x scenario (load levels inside)."""
        return expand_sweep(self.base, self.matrix)


def _join_name(data: dict[str, Any], label: str) -> None:
    data["name"] = "-".join(filter(None, [data.get("name"), label]))


def _concurrency_levels(matrix: SweepMatrix) -> list[int]:
    levels = set(getattr(matrix, "concurrency", None) or [])
    rng = getattr(matrix, "concurrency_range", None)
    if rng is not None:
        levels.update(rng.levels())
    return sorted(levels)


def expand_sweep(base: RunConfig, matrix: SweepMatrix) -> list[RunConfig]:
    """One RunConfig per server configuration x precision x scenario.

    ``matrix`` is a :class:`SweepMatrix` (or a subclass); the axes read
    are engine, model, tp, dp, ep, kv_cache_dtype, precision, roles (per deployment role:
    replicas, nodes, tp, pp, dp, ep), scenarios, and
    concurrency plus concurrency_range (merged, sorted), any of them absent or
    empty. Order is stable (the product in that axis order), so point ids and
    their order do not change between runs. Raises ValueError when two
    combinations would write the same point id.
    """
    axes: list[list[tuple[str, Any]]] = []
    for key in ("engine", "model", "tp", "dp", "ep", "kv_cache_dtype"):
        values = getattr(matrix, key, None) or []
        if values:
            axes.append([(key, v) for v in values])
    precisions = getattr(matrix, "precision", None) or []
    if precisions:
        names = [p.name for p in precisions]
        if len(set(names)) != len(names):
            raise SweepError(f"precision names must be unique, got {names}")
        axes.append([("precision", p) for p in precisions])
    axes.extend(_role_axes(matrix))
    scenarios = getattr(matrix, "scenarios", None) or []
    if scenarios:
        axes.append([("scenario", s) for s in scenarios])
    levels = _concurrency_levels(matrix)
    runs: list[RunConfig] = []
    for combo in itertools.product(*axes) if axes else [()]:
        data = base.model_dump()
        for key, value in combo:
            _apply_axis(data, key, value)
        if levels:
            data["load"]["concurrency"] = levels
            data["load"]["request_rate"] = None
        runs.append(_combination(data, combo, len(runs) + 1))
    _check_unique_points(runs)
    return runs


def _apply_axis(data: dict[str, Any], key: str, value: Any) -> None:
    """Set one axis value on a RunConfig dump (in place)."""
    if key in ("tp", "dp", "ep"):
        data["parallelism"][key] = value
    elif key == "scenario":
        data["workload"]["isl"], data["workload"]["osl"] = value.isl, value.osl
        _join_name(data, value.name)
    elif key == "precision":
        value.apply(data)
        _join_name(data, value.name)
    elif key == "role":
        apply_role_value(data, *value)
    else:
        data[key] = value


def _combination(data: dict[str, Any], combo: Sequence[Any], number: int) -> RunConfig:
    """One expanded run; a combination that cannot work is a SweepError naming it."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        axes = ", ".join(_axis_label(key, value) for key, value in combo)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'run'}: {e['msg']}" for e in exc.errors()
        )
        raise SweepError(
            f"sweep combination #{number} ({axes or 'the base'}) is not a valid run: {problems}"
        ) from None


def _role_axes(matrix: SweepMatrix) -> list[list[tuple[str, Any]]]:
    return [
        axis
        for role, role_axes in (getattr(matrix, "roles", None) or {}).items()
        for axis in role_axes.axes(role)
    ]


def _axis_label(key: str, value: Any) -> str:
    if key == "role":
        role, field, number = value
        return f"roles.{role}.{field}={number}"
    return f"{key}={getattr(value, 'name', value)}"


def _check_unique_points(runs: Sequence[RunConfig]) -> None:
    seen: dict[str, int] = {}
    for index, run in enumerate(runs):
        for _, pid in point_ids(run):
            if pid in seen and seen[pid] != index:
                raise SweepError(
                    f"two sweep combinations (#{seen[pid] + 1} and #{index + 1}) write the "
                    f"same point id {pid!r}; give the differing axis values distinct names "
                    "(e.g. a precision name, a scenario name, or a run name)"
                )
            seen[pid] = index


# -- filters ---------------------------------------------------------------------------------
def _as_set(value: Any, kind: type) -> set[Any] | None:
    if value is None:
        return None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return {kind(value)}
    return {kind(v) for v in value}


def scenario_matches(run: RunConfig, scenario: str) -> bool:
    """True when ``scenario`` names the run's scenario.

    Accepts ``ISL/OSL`` (``1024/8192``), ``islISL-oslOSL``, or a scenario name.
    Sweeps append the scenario's name last to the run name, so a name matches
    when the run name is that name or ends with ``-`` + that name (``chat``
    matches ``fp8-chat``, not ``chatty``; ``context`` also matches
    ``long-context``: prefer distinct names, or ISL/OSL).
    """
    text = scenario.strip()
    wl = run.workload
    for sep in ("/", ":", "x"):
        left, found, right = text.partition(sep)
        if found and left.isdigit() and right.isdigit():
            return (wl.isl, wl.osl) == (int(left), int(right))
    if text == f"isl{wl.isl}-osl{wl.osl}":
        return True
    if not run.name or not text:
        return False
    return run.name == text or run.name.endswith(f"-{text}")


def filter_runs(
    runs: Iterable[RunConfig],
    *,
    engine: str | Iterable[str] | None = None,
    tp: int | Iterable[int] | None = None,
    max_concurrency: int | None = None,
    scenario: str | Iterable[str] | None = None,
) -> list[RunConfig]:
    """The runs (and load points) a filter selects; None means "no filter on this".

    - ``engine``: engine name(s) to keep.
    - ``tp``: tensor-parallel size(s) to keep.
    - ``max_concurrency``: keep closed-loop levels <= N (a run with none left
      is dropped); an open-loop run is kept only when its concurrency cap
      (``load.max_concurrency``) is set and <= N.
    - ``scenario``: scenario(s) by name or ``ISL/OSL`` (see :func:`scenario_matches`).

    Pure: the given runs are not modified; order is kept.
    """
    engines = _as_set(engine, str)
    tps = _as_set(tp, int)
    scenarios = sorted(_as_set(scenario, str) or [])
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    out: list[RunConfig] = []
    for run in runs:
        if engines is not None and run.engine not in engines:
            continue
        if tps is not None and run.parallelism.tp not in tps:
            continue
        if scenarios and not any(scenario_matches(run, s) for s in scenarios):
            continue
        if max_concurrency is not None:
            if run.load.request_rate is not None:
                cap = run.load.max_concurrency
                if cap is None or cap > max_concurrency:
                    continue
            else:
                levels = [c for c in run.load.concurrency or [1] if c <= max_concurrency]
                if not levels:
                    continue
                if levels != (run.load.concurrency or [1]):
                    load = run.load.model_copy(update={"concurrency": levels})
                    run = run.model_copy(update={"load": load})
        out.append(run)
    return out


def count_points(runs: Iterable[RunConfig]) -> int:
    """Load points over all runs (one result file each)."""
    total = 0
    for run in runs:
        load = run.load
        total += (
            len(load.request_rate)
            if load.request_rate is not None
            else len(load.concurrency or [1])
        )
    return total
