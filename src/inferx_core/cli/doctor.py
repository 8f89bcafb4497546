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
    from inferx_core.cli.docs import doc_reference
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
            {**fix.describe(), "reference": doc_reference(fix.reference), "plugin": plugin}
            for plugin, fix in fix_catalogue(pm)
        ],
        "plugin_errors": [r.to_json() for r in pm.records if r.status == "error"],
    }


def _joined(parts: list[str | None], sep: str = ", ") -> str:
    return sep.join(p for p in parts if p)


def host_line(host: dict[str, Any]) -> str:
    """The host in one line; a fact the platform does not have is left out, never 'None'."""
    cores = host.get("cpu_logical_cores")
    memory = host.get("memory_total_mib")
    system = _joined([host.get("os"), host.get("kernel")], " ")
    facts = _joined(
        [
            host.get("cpu_model"),
            f"{cores} logical cores" if cores else None,
            f"{memory} MiB" if memory else None,
            system or None,
            f"Python {host['python']}" if host.get("python") else None,
        ]
    )
    return _joined([host.get("hostname") or "host", facts or "no details"], ": ")


def accelerator_line(acc: dict[str, Any]) -> str:
    """One accelerator; fields it does not report are left out, never 'None'."""
    memory = acc.get("memory_total_mib")
    details = _joined(
        [
            f"arch={acc['arch']}" if acc.get("arch") else None,
            f"mem={memory} MiB" if memory else None,
            f"driver={acc['driver_version']}" if acc.get("driver_version") else None,
        ],
        " ",
    )
    return _joined([f"{acc['vendor']} #{acc['index']}: {acc['name']}", details], " ")


def render_doctor(report: dict[str, Any], console: Console) -> None:
    from rich.table import Table

    platform = report["platform"]
    host = platform.get("host") or {}
    console.print("[bold]Host[/]")
    if not host:
        console.print("  not described (platform file without a host)")
    else:
        console.print(f"  {host_line(host)}", highlight=False)
    console.print("[bold]Accelerators[/]")
    if not platform["accelerators"]:
        console.print("  none (CPU only)")
    for acc in platform["accelerators"]:
        console.print(f"  {accelerator_line(acc)}", highlight=False)
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
