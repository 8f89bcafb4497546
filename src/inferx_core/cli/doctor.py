"""``inferx doctor``: what InferX sees here and what it would do about it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.config.models import ServerConfig
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import load_platform
from inferx_core.sdk.registries import detect_platform, engine_registry, fix_catalogue

if TYPE_CHECKING:
    from rich.console import Console

PLACEHOLDER_MODEL = "<model>"


def doctor_report(platform_file: str | Path | None = None) -> dict[str, Any]:
    from inferx_core.launch.resolve import resolve_launch

    pm = get_plugin_manager()
    platform = load_platform(platform_file) if platform_file else detect_platform(pm)
    registry = engine_registry(pm)
    engines = []
    for name, entry in sorted(registry.engines.items()):
        item: dict[str, Any] = {
            "name": name,
            "description": entry.info.description,
            "plugin": entry.plugin,
            "distribution": entry.distribution,
        }
        server = ServerConfig(engine=name, model=PLACEHOLDER_MODEL, port=entry.info.default_port)
        try:
            resolved = resolve_launch(pm, server, platform)
        except Exception as exc:  # doctor reports, never fails
            item["launch_error"] = f"{type(exc).__name__}: {exc}"
            item["fixes"] = []
        else:
            item["argv"] = list(resolved.spec.argv)
            item["fixes"] = [d.model_dump() for d in resolved.decisions]
        engines.append(item)
    return {
        "platform": platform.model_dump(mode="json"),
        "gpu_count": platform.gpu_count,
        "engines": engines,
        "engine_conflicts": {k: [e.distribution for e in v] for k, v in registry.conflicts.items()},
        "fix_catalogue": [
            {**fix.describe(), "plugin": plugin} for plugin, fix in fix_catalogue(pm)
        ],
        "plugin_errors": [r.to_json() for r in pm.records if r.status == "error"],
    }


def render_doctor(report: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    platform = report["platform"]
    host = platform.get("host") or {}
    console.print("[bold]Host[/]")
    if not host:
        console.print("  not described (platform file without a host)")
    else:
        console.print(
            f"  {host.get('hostname')}: {host.get('cpu_model')}, "
            f"{host.get('cpu_logical_cores')} logical cores, {host.get('memory_total_mib')} MiB, "
            f"{host.get('os')} {host.get('kernel')}, Python {host.get('python')}"
        )
    console.print("[bold]Accelerators[/]")
    if not platform["accelerators"]:
        console.print("  none (CPU only)")
    for acc in platform["accelerators"]:
        console.print(
            f"  {acc['vendor']} #{acc['index']}: {acc['name']} arch={acc.get('arch')} "
            f"mem={acc.get('memory_total_mib')} MiB driver={acc.get('driver_version')}"
        )
    for note in platform["notes"]:
        console.print(f"  [yellow]note[/] ({note['source']}): {note['message']}")
    table = Table(title="Engines")
    for col in ("engine", "distribution", "fixes that would apply here"):
        table.add_column(col)
    for engine in report["engines"]:
        applied = [f"{f['id']}: {f['reason']}" for f in engine["fixes"] if f["applied"]]
        if "launch_error" in engine:
            applied = [f"[red]launch spec error[/]: {engine['launch_error']}"]
        table.add_row(engine["name"], engine["distribution"], "\n".join(applied) or "none")
    console.print(table)
    for err in report["plugin_errors"]:
        console.print(f"[red]plugin error[/] {err['name']} ({err['distribution']}): {err['error']}")
