"""A test engine plugin: engine ``fake``, played by the scripted SSE server.

Register it in-process::

    import fake_engine
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])

``server.plugin_options`` script its behaviour:

``mode``
    ``ok`` (default): the SSE server serves until stopped.
    ``crash_on_start``: prints a CUDA OOM line and exits with code 7 at once.
    ``die_after_s``: serves, then ``os._exit(9)`` ``die_after_s`` seconds after the
    first generation request (not after start: counting the prompts on the server
    can take seconds on a loaded machine, and the death must fall in the load).
    ``never_ready``: a plain ``http.server`` on the port; ``/health`` is a 404 forever.
    ``missing_executable``: argv[0] does not exist (engine not installed).
``ttft_ms``, ``itl_ms``
    the SSE server's timing (default 0).
``die_after_s``
    seconds after the first generation request for mode ``die_after_s`` (default 2).
``max_concurrent``
    the SSE server serves at most this many generations at once; the rest wait (a
    known capacity for the capacity search).

Its tokenize route (hook ``inferx_engine_tokenize_endpoints``) is the SSE server's
``/tokenize``, named ``fake``: the runner asks only the launched engine's plugin.

It also offers two fixes, ``fake-unbuffered-log`` (applies to engine ``fake``:
sets PYTHONUNBUFFERED=1) and ``fake-never`` (never applies), so results carry
both an applied fix and a declined decision.
"""

from __future__ import annotations

import sys

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    ReadinessProbe,
    TokenizeEndpoint,
    hookimpl,
)
from inferx_core.config.models import ServerConfig
from inferx_core.sdk.fixes import Fix, FixContext, FixVerdict
from inferx_core.sdk.platform import Platform

ENGINE = "fake"
MODES = ("ok", "crash_on_start", "die_after_s", "never_ready", "missing_executable")
MISSING_EXECUTABLE = "/nonexistent/fake-engine"
CRASH_MESSAGE = "boom: CUDA out of memory"
CRASH_CODE = 7
DIE_CODE = 9

# Runs the SSE server's main() and kills the whole process N seconds after the
# first generation request, like an engine whose worker segfaults mid-run.
_DIE_SCRIPT = """
import os, sys, threading
from inferx_core.testing import server, sse_server

def die():
    print("fake engine: worker died", flush=True)
    os._exit({code})

timer = threading.Timer({seconds}, die)
generate = server.ServerProtocol._generate

def generate_then_die(self, *args, **kwargs):
    if timer.ident is None:  # not started yet
        timer.start()
    return generate(self, *args, **kwargs)

server.ServerProtocol._generate = generate_then_die
sse_server.main(sys.argv[1:])
"""


def sse_server_args(server: ServerConfig) -> list[str]:
    """The SSE server's own arguments (after the module/script)."""
    opts = server.plugin_options
    capacity = opts.get("max_concurrent")
    return [
        *(["--max-concurrent", str(int(capacity))] if capacity is not None else []),
        "--host",
        server.host,
        "--port",
        str(server.port),
        "--ttft-ms",
        str(float(opts.get("ttft_ms", 0.0))),
        "--itl-ms",
        str(float(opts.get("itl_ms", 0.0))),
        "--model",
        server.name_served,
    ]


def build_argv(server: ServerConfig) -> list[str]:
    mode = server.plugin_options.get("mode", "ok")
    if mode not in MODES:
        raise ValueError(f"fake engine: unknown mode {mode!r}; known: {', '.join(MODES)}")
    python = sys.executable
    if mode == "crash_on_start":
        code = f"print({CRASH_MESSAGE!r}, flush=True); raise SystemExit({CRASH_CODE})"
        return [python, "-c", code]
    if mode == "die_after_s":
        seconds = float(server.plugin_options.get("die_after_s", 2.0))
        script = _DIE_SCRIPT.format(code=DIE_CODE, seconds=seconds)
        return [python, "-c", script, *sse_server_args(server)]
    if mode == "missing_executable":
        return [MISSING_EXECUTABLE, *sse_server_args(server)]
    if mode == "never_ready":
        return [python, "-m", "http.server", "--bind", server.host, str(server.port)]
    return [python, "-m", "inferx_core.testing.sse_server", *sse_server_args(server)]


@hookimpl
def inferx_engines() -> list[EngineInfo]:
    return [
        EngineInfo(
            name=ENGINE,
            description="scripted SSE test server posing as an engine (tests only)",
            default_port=8000,
            version_path=None,  # the SSE server has no version endpoint
        )
    ]


@hookimpl
def inferx_engine_launch_spec(server: ServerConfig, platform: Platform) -> LaunchSpec | None:
    if server.engine != ENGINE:
        return None
    assert server.port is not None
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(build_argv(server)),
        env=dict(server.engine_env),
        host=server.host,
        port=server.port,
        labels={"engine": ENGINE, "model": server.model},
    )


@hookimpl
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe] | None:
    if server.engine != ENGINE:
        return None
    return [
        ReadinessProbe(name="health", path="/health", timeout_s=5),
        ReadinessProbe(
            name="model listed",
            path="/v1/models",
            expect_in_body="{served_model_name}",
            timeout_s=5,
        ),
    ]


@hookimpl
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap | None:
    return None  # the SSE server has no /metrics


#: The SSE server's /tokenize, spoken as vLLM's ({prompt} -> {tokens, count,
#: max_model_len}; the server has no /detokenize, which the probe finds out).
TOKENIZE = TokenizeEndpoint(
    name=ENGINE,
    path="/tokenize",
    text_field="prompt",
    add_special_field="add_special_tokens",
    model_field="model",
    tokens_field="tokens",
    max_model_len_field="max_model_len",
    detokenize_path="/detokenize",
    detokenize_tokens_field="tokens",
    detokenize_text_fields=("prompt",),
)


@hookimpl
def inferx_engine_tokenize_endpoints(server: ServerConfig | None) -> list[TokenizeEndpoint]:
    return [TOKENIZE]


def _is_fake(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    if spec.engine == ENGINE:
        return FixVerdict(True, "engine is the fake test engine")
    return FixVerdict(False, f"engine is {spec.engine!r}, not {ENGINE!r}")


def _never(ctx: FixContext, spec: LaunchSpec) -> FixVerdict:
    return FixVerdict(False, "never applies (test fix)")


FIXES = [
    Fix(
        id="fake-unbuffered-log",
        title="Unbuffered engine output",
        symptom="the engine log misses the last lines before a crash",
        condition_text="engine is fake",
        change_text="set PYTHONUNBUFFERED=1",
        reference="tests/fake_engine.py",
        condition=_is_fake,
        change=lambda spec, ctx: spec.with_env(PYTHONUNBUFFERED="1"),
    ),
    Fix(
        id="fake-never",
        title="A fix that never applies",
        symptom="none",
        condition_text="never",
        change_text="nothing",
        reference="tests/fake_engine.py",
        condition=_never,
        change=lambda spec, ctx: spec,
    ),
]


@hookimpl
def inferx_container_fixes() -> list[Fix]:
    return FIXES
