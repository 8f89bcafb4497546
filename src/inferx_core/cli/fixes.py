"""``inferx fixes``: every known container/driver fix, and which apply where and why.

- ``inferx fixes``: the catalogue (id, title, plugin, symptom, condition,
  change, reference), from every installed plugin.
- ``inferx fixes --platform FILE [--config CONFIG]``: also, per server
  configuration (or per engine with a placeholder model when no config is
  given), each fix's decision on that platform, with the reason in words;
  without ``--platform`` the platform is detected.
- ``--json`` prints the same as JSON; ``--markdown`` prints the catalogue as
  the table of docs/fixes.md.

Registered by ``inferx_core.cli.app`` through :func:`register_command`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferx_core.config.models import ServerConfig
    from inferx_core.sdk.manager import InferxPluginManager
    from inferx_core.sdk.platform import Platform


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "fixes", help="list the container/driver fixes, and which apply to a config and why"
    )
    p.add_argument("--platform", metavar="FILE", help="platform JSON (e.g. an H200 node)")
    p.add_argument("--config", metavar="CONFIG", help="run or sweep config to evaluate")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="machine-readable output")
    form.add_argument("--markdown", action="store_true", help="the catalogue as a markdown table")
    p.set_defaults(handler=cmd_fixes)


def catalogue(pm: InferxPluginManager) -> list[dict[str, Any]]:
    """Every fix offered, in application order, with the plugin that offers it."""
    from inferx_core.cli.docs import doc_reference
    from inferx_core.sdk.registries import fix_catalogue

    # A checkout path (docs/fixes.md#...) becomes `inferx docs fixes#...`: the
    # page ships in the package, the checkout may not exist.
    return [
        {
            **fix.describe(),
            "reference": doc_reference(fix.reference),
            "plugin": plugin,
            "order": fix.order,
        }
        for plugin, fix in fix_catalogue(pm)
    ]


def _servers(pm: InferxPluginManager, config: str | None) -> list[tuple[str, ServerConfig]]:
    """(label, ServerConfig with a port) for each server of the config, or one per engine."""
    from inferx_core.config.models import ServerConfig
    from inferx_core.sdk.registries import engine_registry

    registry = engine_registry(pm)
    if config is None:
        return [
            (name, ServerConfig(engine=name, model="<model>", port=entry.info.default_port))
            for name, entry in sorted(registry.engines.items())
        ]
    from inferx_core.config.loader import load_run_configs
    from inferx_core.config.points import server_id

    servers = []
    for cfg in load_run_configs(config):
        port = cfg.port or registry.get(cfg.engine).info.default_port
        servers.append((server_id(cfg), cfg.server().model_copy(update={"port": port})))
    return servers


def evaluate(
    pm: InferxPluginManager, platform: Platform, config: str | None
) -> list[dict[str, Any]]:
    """Per server: each fix's decision (applied or not, and why) and what applied ones changed."""
    from inferx_core.launch.resolve import resolve_launch
    from inferx_core.sdk.redact import redact

    out = []
    for label, server in _servers(pm, config):
        item: dict[str, Any] = {"server": label, "engine": server.engine}
        try:
            resolved = resolve_launch(pm, server, platform)
        except Exception as exc:
            if config is not None:
                raise  # the user's config: its error is the answer
            item["error"] = f"{type(exc).__name__}: {exc}"
            item["decisions"], item["applied"] = [], []
        else:
            item["decisions"] = [d.model_dump() for d in resolved.decisions]
            item["applied"] = [a.model_dump() for a in resolved.applied_fixes]
        out.append(redact(item))
    return out


def markdown_table(fixes: list[dict[str, Any]]) -> str:
    """The catalogue as one markdown table (docs/fixes.md)."""

    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = [
        "| id | plugin | title | condition | change |",
        "|---|---|---|---|---|",
    ]
    for fix in fixes:
        lines.append(
            f"| `{fix['id']}` | {cell(fix['plugin'])} | {cell(fix['title'])} | "
            f"{cell(fix['condition'])} | {cell(fix['change'])} |"
        )
    return "\n".join(lines) + "\n"


#: The tag of a fix that takes effect only on an engine InferX starts as a process: in a
#: container docker's own flags (--gpus, --device) do its job, and it never applies there.
PROCESS_ONLY_TAG = "process-only"
IN_A_CONTAINER = "cannot take effect: a process launch's setting (docker's flags do this)"


def render(fixes: list[dict[str, Any]], evaluations: list[dict[str, Any]] | None) -> None:
    from rich.console import Console
    from rich.markup import escape

    console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=True)
    console.rule(f"[bold]{len(fixes)} fixes[/]")
    for fix in fixes:
        console.print(
            f"[bold]{escape(fix['id'])}[/] ({escape(fix['plugin'])}): {escape(fix['title'])}"
        )
        for key in ("symptom", "condition", "change", "reference"):
            console.print(f"  {key}: {escape(fix[key])}", highlight=False)
        if PROCESS_ONLY_TAG in fix.get("tags", ()):
            console.print(f"  in a container: {IN_A_CONTAINER}", highlight=False)
    for item in evaluations or []:
        console.rule(f"[bold]{escape(item['server'])}[/] ({escape(item['engine'])})")
        if "error" in item:
            console.print(f"  [red]launch spec error[/]: {escape(item['error'])}")
        for decision in item["decisions"]:
            mark = "[green]applies[/]" if decision["applied"] else "[dim]not applied[/]"
            console.print(
                f"  {mark} {escape(decision['id'])}: {escape(decision['reason'])}",
                highlight=False,
            )


def cmd_fixes(args: argparse.Namespace) -> int:
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import load_platform
    from inferx_core.sdk.registries import detect_platform

    pm = get_plugin_manager()
    fixes = catalogue(pm)
    if args.markdown:
        sys.stdout.write(markdown_table(fixes))
        return 0
    evaluations = None
    if args.platform or args.config:
        platform = load_platform(args.platform) if args.platform else detect_platform(pm)
        evaluations = evaluate(pm, platform, args.config)
    if args.json:
        data: dict[str, Any] = {"fixes": fixes}
        if evaluations is not None:
            data["evaluations"] = evaluations
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
    else:
        render(fixes, evaluations)
    return 0
