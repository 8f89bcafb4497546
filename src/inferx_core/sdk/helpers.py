"""Pieces the engine plugins (vLLM, SGLang, TensorRT-LLM) share.

Each plugin keeps its own flag spellings, aliases and reserved flags; what is
here is the logic that is the same for every engine: which GPUs a server gets
by default, how one ``engine_args`` entry replaces a flag in argv, how
``plugin_options.<engine>`` is checked against the plugin's pydantic model, and
the preflight wait and readiness probe every OpenAI-compatible server gets.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from inferx_core.config.models import ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.launch_spec import PreflightWait
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.probes import ReadinessProbe

#: How long the launch waits for the engine's port to be free before it starts.
PORT_WAIT_S = 120.0

OptionsModel = TypeVar("OptionsModel", bound=BaseModel)


def default_gpu_ids(server: ServerConfig, platform: Platform) -> tuple[int, ...]:
    """``gpu_ids`` when the config names them, else the first ``num_gpus`` accelerators."""
    if server.gpu_ids is not None:
        return tuple(server.gpu_ids)
    return tuple(a.index for a in platform.accelerators)[: server.num_gpus]


def set_flag(argv: list[str], flag: str, value: object) -> None:
    """Set ``flag`` in ``argv`` in place: replace its value where it is, else append.

    True is a switch, False removes the switch, a list gives several values
    (nargs="+"), None leaves argv alone.
    """
    if value is None:
        return
    if flag in argv:
        i = argv.index(flag)
        end = i + 1
        while end < len(argv) and not argv[end].startswith("--"):
            end += 1
        del argv[i:end]
    else:
        i = len(argv)
    if value is True:
        argv.insert(i, flag)
    elif value is False:
        return
    elif isinstance(value, list):
        argv[i:i] = [flag, *(str(v) for v in value)] if value else []
    else:
        argv[i:i] = [flag, str(value)]


def plugin_options(
    server: ServerConfig, key: str, model: type[OptionsModel], example: str
) -> OptionsModel:
    """``plugin_options.<key>`` validated by ``model``; problems are the user's to fix.

    ``example`` is one option as YAML (``attention_backend: fa3``), shown when
    the value is not a mapping.
    """
    raw = server.plugin_options.get(key) or {}
    if not isinstance(raw, dict):
        raise UserFacingError(
            f"plugin_options.{key} must be a mapping, e.g. {{{key}: {{{example}}}}}; got {raw!r}"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise UserFacingError(options_error(exc, key, model)) from None


def options_error(exc: ValidationError, key: str, model: type[BaseModel]) -> str:
    """One line per problem, naming the option as it is written in the config."""
    problems = []
    for error in exc.errors():
        where = f"plugin_options.{key}." + ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown option; known: {', '.join(model.model_fields)}")
        else:
            problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def port_free_wait(port: int) -> PreflightWait:
    """Wait for the engine's port: a server of the previous run may still hold it."""
    return PreflightWait(
        kind="port_free",
        port=port,
        timeout_s=PORT_WAIT_S,
        reason="the engine's port must be free (another server may still hold it)",
    )


def tiny_completion_probe(name: str) -> ReadinessProbe:
    """One token through the OpenAI completions route the benchmark uses."""
    return ReadinessProbe(
        name=name,
        method="POST",
        path="/v1/completions",
        json_body={"model": "{served_model_name}", "prompt": "Hello", "max_tokens": 1},
        timeout_s=120,
    )
