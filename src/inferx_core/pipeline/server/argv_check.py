"""Ask the engine's own parser about a launch's argv (``inferx plan --check-args``)."""

from __future__ import annotations

from inferx_core.config.models import ServerConfig
from inferx_core.sdk.argv_check import ArgvVerdict
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.manager import InferxPluginManager


def check_argv(pm: InferxPluginManager, server: ServerConfig, spec: LaunchSpec) -> ArgvVerdict:
    """The engine plugin's verdict on ``spec.argv``; a plugin that cannot check says so."""
    _plugin, verdict = pm.call_first("inferx_engine_argv_verdict", server=server, spec=spec)
    if verdict is None:
        return ArgvVerdict(
            engine=server.engine,
            accepted=None,
            message=(
                f"the {server.engine} engine's plugin does not check argv "
                "(it implements no inferx_engine_argv_verdict)"
            ),
        )
    return verdict


def describe(verdict: ArgvVerdict) -> str:
    """One line: what parsed the argv and what it said."""
    by = " ".join(x for x in (verdict.engine, verdict.engine_version) if x)
    where = f" ({verdict.checked_with})" if verdict.checked_with else ""
    if verdict.accepted:
        return f"argv accepted by {by}'s own parser{where}"
    if verdict.accepted is False:
        return f"argv refused by {by}'s own parser{where}: {verdict.message}"
    return f"argv not checked: {verdict.message}"
