"""A test plugin: the fake engine's roles of a deployment, for the SLURM deployment tests.

Workers (role ``both``, ``prefill``, ``decode``) are the scripted SSE server
(tests/fake_engine.py); ``plugin_options.replica_modes`` (replica number ->
fake mode, e.g. ``{"1": "die_after_s"}``) scripts one replica's behaviour.
The router is the real SGLang router (``plugin_options.router_command``, e.g.
``[python, -m, sglang_router.launch_router]``) with ``--worker-urls`` of every
replica's head: what the vLLM and SGLang plugins start for a ``wide_ep``
deployment. Its readiness is ``/health`` and a completion through it
(sglang-router lists non-SGLang workers' model as ``unknown``).
"""

from __future__ import annotations

import fake_engine

from inferx_core import LaunchSpec, ReadinessProbe, hookimpl, tiny_completion_probe
from inferx_core.config.models import ServerConfig
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.roles import RoleContext


@hookimpl
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    if server.engine != fake_engine.ENGINE:
        return None
    opts = server.plugin_options
    if role.role == "router":
        urls = [url for urls in role.peers.values() for url in urls]
        argv = [
            *opts["router_command"],
            "--worker-urls",
            *urls,
            "--host",
            server.host,
            "--port",
            str(server.port),
            "--policy",
            "round_robin",
        ]
        gpu_ids: tuple[int, ...] = ()
    else:
        mode = opts.get("replica_modes", {}).get(str(role.replica), "ok")
        worker = server.model_copy(update={"plugin_options": {**opts, "mode": mode}})
        argv = fake_engine.build_argv(worker)
        gpu_ids = tuple(server.gpu_ids or ())
    return LaunchSpec(
        engine=fake_engine.ENGINE,
        argv=tuple(argv),
        host=server.host,
        port=server.port,
        env=dict(server.engine_env),
        gpu_ids=gpu_ids,
        labels={"engine": fake_engine.ENGINE, "model": server.model},
    )


@hookimpl(tryfirst=True)
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe] | None:
    if server.engine != fake_engine.ENGINE or spec is None or spec.labels.get("role") != "router":
        return None
    return [
        ReadinessProbe(name="health", path="/health", timeout_s=5),
        tiny_completion_probe("completion through the router"),
    ]
