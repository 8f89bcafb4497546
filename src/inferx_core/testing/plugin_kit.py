"""Check an installed InferX plugin against the contract (the plugin test kit).

For plugin authors: call these from your own tests (plain functions; each
raises ``AssertionError`` with the reason, so pytest prints it well)::

    from inferx_core import Platform
    from inferx_core.testing.plugin_kit import check_plugin

    def test_contract():
        check_plugin("my-tpu-plugin", platforms=[Platform.model_validate_json(...)])

or one check at a time: :func:`check_entry_point_is_light` (the entry point
imports without torch, the engine or other heavy modules),
:func:`check_engines` (names unique across everything installed, valid
``EngineInfo``), :func:`check_launch_specs` (each engine's ``LaunchSpec``
for a platform, fixes applied, readiness probes), :func:`check_fixes`
(well-formed ids and texts, conditions that explain themselves) and
:func:`check_docs` (a long description, a summary, a license). Every check
loads plugins in strict mode (``INFERX_STRICT_PLUGINS=1``), so any hook
failure fails the test with the plugin's name.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from email.message import Message
from importlib import metadata
from typing import cast

from inferx_core.config.models import Parallelism, ServerConfig
from inferx_core.launch.resolve import ResolvedLaunch, resolve_launch
from inferx_core.sdk.fixes import Fix, FixContext, FixVerdict
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.manager import ENTRY_POINT_GROUP, InferxPluginManager, get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.registries import check_hooks, engine_registry, fix_catalogue

#: Modules a plugin's entry point must not import: the engine runs in its own
#: process, and `inferx --help`/`inferx plugins` load every plugin.
HEAVY_MODULES: tuple[str, ...] = (
    "torch",
    "vllm",
    "sglang",
    "tensorrt_llm",
    "transformers",
    "jax",
    "tensorflow",
    "lm_eval",
    "datasets",
    "pandas",
)
FIX_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PLACEHOLDER_MODEL = "org/placeholder-model"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entry_points(distribution: str) -> list[metadata.EntryPoint]:
    """The distribution's entry points in group ``inferx`` (at least one, else a failure)."""
    dist = metadata.distribution(distribution)
    found = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
    assert found, f"{distribution} declares no entry point in group {ENTRY_POINT_GROUP!r}"
    return found


def plugin_names(distribution: str) -> list[str]:
    return [ep.name for ep in entry_points(distribution)]


def strict_plugin_manager() -> InferxPluginManager:
    """Every installed plugin, strict: a plugin that fails to load raises, named."""
    return get_plugin_manager(env={"INFERX_STRICT_PLUGINS": "1"})


def check_entry_point_is_light(
    distribution: str, heavy: Sequence[str] = HEAVY_MODULES
) -> list[str]:
    """Load each entry point in a fresh interpreter; none of ``heavy`` may be imported.

    Returns the entry point names checked.
    """
    names = plugin_names(distribution)
    code = (
        "import json, sys\n"
        "from importlib import metadata\n"
        f"dist = metadata.distribution({distribution!r})\n"
        f"for ep in dist.entry_points:\n"
        f"    if ep.group == {ENTRY_POINT_GROUP!r}: ep.load()\n"
        f"print(json.dumps([m for m in {list(heavy)!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{distribution}: loading its entry points failed:\n{done.stderr}"
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert not imported, (
        f"{distribution}: loading the entry point imports {', '.join(imported)}; import heavy "
        "modules inside the hook that needs them (the engine runs in its own process)"
    )
    return names


def check_engines(distribution: str, pm: InferxPluginManager | None = None) -> list[str]:
    """The distribution's engines: registered once, names unique among all installed plugins.

    Returns the engine names.
    """
    pm = pm or strict_plugin_manager()
    registry = engine_registry(pm)
    mine = set(plugin_names(distribution))
    clashes = {
        name: [e.distribution for e in entries]
        for name, entries in registry.conflicts.items()
        if any(e.plugin in mine for e in entries)
    }
    assert not clashes, f"{distribution}: engine names claimed twice: {clashes}"
    engines = sorted(name for name, e in registry.engines.items() if e.plugin in mine)
    for name in engines:
        info = registry.engines[name].info
        assert info.name == name and info.description, f"{name}: EngineInfo needs a description"
    return engines


@dataclass
class LaunchCheck:
    """What :func:`check_launch_specs` saw for one engine on one platform."""

    engine: str
    platform: Platform
    resolved: ResolvedLaunch
    probes: list = field(default_factory=list)


def _server(pm: InferxPluginManager, engine: str, model: str, num_gpus: int) -> ServerConfig:
    port = engine_registry(pm).get(engine).info.default_port or 8000
    return ServerConfig(engine=engine, model=model, port=port, parallelism=Parallelism(tp=num_gpus))


def check_launch_specs(
    distribution: str,
    platforms: Iterable[Platform],
    *,
    model: str = PLACEHOLDER_MODEL,
    pm: InferxPluginManager | None = None,
) -> list[LaunchCheck]:
    """Each engine's launch spec on each platform: valid, for this engine and port, fixes applied.

    The server asks for one accelerator (or none on a platform without any).
    """
    pm = pm or strict_plugin_manager()
    checks = []
    for platform in platforms:
        for engine in check_engines(distribution, pm):
            server = _server(pm, engine, model, 1)
            resolved = resolve_launch(pm, server, platform)
            spec = resolved.spec
            assert spec.engine == engine, f"{engine}: LaunchSpec.engine is {spec.engine!r}"
            assert spec.port == server.port, (
                f"{engine}: LaunchSpec.port {spec.port} is not server.port {server.port} "
                "(the core picks the port; the spec must use it)"
            )
            assert str(server.port) in " ".join(spec.argv) or spec.env, (
                f"{engine}: the port {server.port} appears nowhere in argv"
            )
            known = {a.index for a in platform.accelerators}
            assert set(spec.gpu_ids) <= known, f"{engine}: gpu_ids {spec.gpu_ids} not on platform"
            _, probes = pm.call_first("inferx_engine_readiness", server=server, spec=spec)
            assert probes is None or isinstance(probes, list), f"{engine}: readiness not a list"
            checks.append(LaunchCheck(engine, platform, resolved, list(probes or [])))
    return checks


def _check_fix(fix: Fix, contexts: Sequence[tuple[FixContext, LaunchSpec]]) -> None:
    assert FIX_ID.match(fix.id), f"fix id {fix.id!r}: lower-case words joined by '-'"
    for name in ("title", "symptom", "condition_text", "change_text", "reference"):
        assert getattr(fix, name).strip(), f"fix {fix.id}: {name} is empty"
    assert callable(fix.condition) and callable(fix.change), f"fix {fix.id}: not callable"
    for ctx, spec in contexts:
        verdict = fix.condition(ctx, spec)
        assert isinstance(verdict, FixVerdict), f"fix {fix.id}: condition returned {verdict!r}"
        assert verdict.reason.strip(), f"fix {fix.id}: a verdict must say why"


def check_fixes(
    distribution: str,
    platforms: Iterable[Platform] = (),
    *,
    pm: InferxPluginManager | None = None,
) -> list[str]:
    """The distribution's fixes: well-formed, unique ids, each condition answering with a reason
    for every engine's launch spec on ``platforms``. Returns the fix ids."""
    pm = pm or strict_plugin_manager()
    mine = set(plugin_names(distribution))
    fixes = [fix for plugin, fix in fix_catalogue(pm) if plugin in mine]
    contexts = [
        (
            FixContext(server=_server(pm, c.engine, PLACEHOLDER_MODEL, 1), platform=c.platform),
            c.resolved.base_spec,
        )
        for c in check_launch_specs_all(pm, platforms)
    ]
    for fix in fixes:
        _check_fix(fix, contexts)
    return [fix.id for fix in fixes]


def check_launch_specs_all(pm: InferxPluginManager, platforms: Iterable[Platform]) -> list:
    """Launch checks for every installed engine (fixes meet every engine's specs)."""
    dists = {entry.distribution for entry in engine_registry(pm).engines.values()}
    platforms = list(platforms)
    return [c for d in sorted(dists) for c in check_launch_specs(d, platforms, pm=pm)]


def check_docs(distribution: str, min_description: int = 300) -> None:
    """Metadata for the package index: a summary, a long description, a license, a URL."""
    # the object is an email Message; PackageMetadata's protocol names only part of it
    meta = cast(Message, metadata.metadata(distribution))
    assert (meta.get("Summary") or "").strip(), f"{distribution}: no description (Summary)"
    body = meta.get_payload() or meta.get("Description") or ""
    assert len(body) >= min_description, (
        f"{distribution}: long description of {len(body)} characters; set readme = "
        "'README.md' in [project] (what the package index shows)"
    )
    assert meta.get("License-Expression") or meta.get("License"), f"{distribution}: no license"
    assert meta.get_all("Project-URL"), f"{distribution}: no [project.urls]"


def check_plugin(distribution: str, platforms: Sequence[Platform] = ()) -> dict[str, list[str]]:
    """Every check above; returns what was checked (entry points, engines, fixes)."""
    pm = strict_plugin_manager()
    failures = [f for f in check_hooks(pm) if f.plugin in set(plugin_names(distribution))]
    assert not failures, f"{distribution}: hook failures {failures}"
    checked = {
        "entry_points": check_entry_point_is_light(distribution),
        "engines": check_engines(distribution, pm),
        "fixes": check_fixes(distribution, platforms, pm=pm),
    }
    check_launch_specs(distribution, platforms, pm=pm)
    check_docs(distribution)
    return checked


__all__ = [
    "HEAVY_MODULES",
    "LaunchCheck",
    "check_docs",
    "check_engines",
    "check_entry_point_is_light",
    "check_fixes",
    "check_launch_specs",
    "check_plugin",
    "entry_points",
    "strict_plugin_manager",
]
