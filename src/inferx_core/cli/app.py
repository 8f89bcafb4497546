"""The ``inferx`` command. Only argparse at import: ``--version``/``--help`` stay fast.

Each sub-command imports what it needs inside its handler, so a broken or
slow plugin can only affect the commands that load plugins, and even those
report it by name instead of failing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from inferx_core._version import __version__

if TYPE_CHECKING:
    from rich.console import Console

Handler = Callable[[argparse.Namespace], int]


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


#: Width of tables when stdout is not a terminal (a pipe, a file): rich would
#: otherwise cut them at 80 columns.
PIPED_WIDTH = 200


def _console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=True, width=None if sys.stdout.isatty() else PIPED_WIDTH)


# -- plugins -----------------------------------------------------------------
def _engine_conflicts(pm: Any, registry: Any) -> dict[str, list[str]]:
    """Engine names claimed by several plugins; each claimant is marked as in error."""
    conflicts = {
        name: [f"{e.distribution} ({e.plugin})" for e in entries]
        for name, entries in registry.conflicts.items()
    }
    for name, entries in registry.conflicts.items():
        for entry in entries:
            record = pm.record_for(entry.plugin)
            if record is not None and record.status == "ok":
                record.status = "error"
                others = [f"{e.distribution}" for e in entries if e is not entry]
                record.error = f"engine {name!r} is also claimed by {', '.join(others)}"
    return conflicts


def _names_by_plugin(
    pm: Any, conflicts: dict[str, list[str]]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(launcher names, executor names) per plugin; a name clash goes into ``conflicts``."""
    from inferx_core.executors.registry import executors
    from inferx_core.sdk.registries import launchers

    launcher_names: dict[str, list[str]] = {}
    executor_names: dict[str, list[str]] = {}
    for kind, lookup, names in (
        ("launchers", launchers, launcher_names),
        ("executors", executors, executor_names),
    ):
        try:
            for lname, (plugin, _) in lookup(pm).items():
                names.setdefault(plugin, []).append(lname)
        except Exception as exc:  # a name clash is shown, not fatal
            conflicts[kind] = [str(exc)]
    return launcher_names, executor_names


def _print_plugins_table(rows: list[dict[str, Any]], failures: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(title="InferX plugins")
    for col in ("name", "distribution", "version", "status", "engines", "hooks"):
        table.add_column(col)
    for row in rows:
        status = row["status"] if row["status"] == "ok" else f"{row['status']}: {row['error']}"
        style = {"ok": "green", "error": "red"}.get(row["status"], "yellow")
        hooks = ", ".join(h.removeprefix("inferx_") for h in row["hooks"])
        table.add_row(
            row["name"],
            row["distribution"],
            row["version"],
            f"[{style}]{status}[/]",
            ", ".join(row["engines"]),
            hooks,
        )
    console = _console()
    console.print(table)
    for failure in failures:
        console.print(
            f"[red]hook failure[/]: {failure['plugin']} in {failure['hook']}: {failure['error']}"
        )


def cmd_plugins(args: argparse.Namespace) -> int:
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import check_hooks, engine_registry

    pm = get_plugin_manager()
    check_hooks(pm)  # detection and registration hooks: failures listed (strict: raised)
    registry = engine_registry(pm)
    engines_by_plugin: dict[str, list[str]] = {}
    for name, entry in registry.engines.items():
        engines_by_plugin.setdefault(entry.plugin, []).append(name)
    conflicts = _engine_conflicts(pm, registry)
    launcher_names, executor_names = _names_by_plugin(pm, conflicts)
    rows = []
    for record in pm.records:
        row = record.to_json()
        row["engines"] = sorted(engines_by_plugin.get(record.name, []))
        row["launchers"] = sorted(launcher_names.get(record.name, []))
        row["executors"] = sorted(executor_names.get(record.name, []))
        rows.append(row)
    failures = [f.__dict__ for f in pm.hook_failures]
    if args.json:
        _print_json({"plugins": rows, "engine_conflicts": conflicts, "hook_failures": failures})
        return 0
    _print_plugins_table(rows, failures)
    return 0


# -- doctor ------------------------------------------------------------------
def cmd_doctor(args: argparse.Namespace) -> int:
    from inferx_core.cli.doctor import doctor_report, render_doctor

    report = doctor_report(platform_file=args.platform)
    if args.json:
        _print_json(report)
    else:
        render_doctor(report, _console())
    return 0


# -- schema ------------------------------------------------------------------
def cmd_schema(args: argparse.Namespace) -> int:
    if args.kind == "result":
        from inferx_core.results.model import result_json_schema

        _print_json(result_json_schema())
        return 0
    from inferx_core.config.models import RunConfig
    from inferx_core.config.sweep import SweepConfig

    model = SweepConfig if args.kind == "sweep" else RunConfig
    _print_json(model.model_json_schema())
    return 0


# -- validate ----------------------------------------------------------------
def cmd_validate(args: argparse.Namespace) -> int:
    """The config and what it points at: dataset lines, tokenizer file, lengths vs context."""
    from inferx_core.config.loader import load_config
    from inferx_core.config.models import BenchConfig
    from inferx_core.config.sweep import SweepConfig
    from inferx_core.pipeline.point.inputs import check_workload_files

    config = load_config(args.config)
    runs: list[Any] = (
        [config]
        if isinstance(config, BenchConfig)
        else config.expand()
        if isinstance(config, SweepConfig)
        else [config]
    )
    for run in runs:
        check_workload_files(run.workload)
    from inferx_core.sdk.redact import redact, redact_text

    if args.json:  # keys, env, headers, URL credentials
        _print_json([redact(r.model_dump(mode="json")) for r in runs])
    elif isinstance(config, BenchConfig):
        print(f"{args.config}: ok (bench config for {redact_text(config.base_url)})")
    else:
        print(f"{args.config}: ok ({len(runs)} server configuration(s))")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inferx",
        description="Benchmark LLM inference engines on real hardware through plugins.",
    )
    parser.add_argument("--version", action="version", version=f"inferx {__version__}")
    parser.add_argument(
        "--log-format",
        choices=("console", "json"),
        default="console",
        help="console for people (default), json for machines",
    )
    parser.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error")
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plugins", help="list plugins, their hooks, engines and status")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_plugins)

    p = sub.add_parser("doctor", help="detected platform, engines, and fixes that would apply")
    p.add_argument("--json", action="store_true")
    p.add_argument("--platform", metavar="FILE", help="platform JSON instead of detection")
    p.set_defaults(handler=cmd_doctor)

    p = sub.add_parser(
        "schema", help="print the JSON Schema of the config files or of a result file"
    )
    p.add_argument(
        "kind",
        nargs="?",
        choices=("run", "config", "sweep", "result"),
        default="run",
        help="run/config: a run config (the default); sweep: a sweep; result: a point result",
    )
    p.set_defaults(handler=cmd_schema)

    p = sub.add_parser("validate", help="check a config file and show what it expands to")
    p.add_argument("config")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_validate)

    for register in _extra_commands():
        register(sub)
    return parser


# Later sub-commands register themselves here (kept as module paths so the
# modules are imported only when ``build_parser`` runs, which --version skips).
_EXTRA_COMMAND_MODULES: tuple[str, ...] = (
    "inferx_core.cli.bench",
    "inferx_core.cli.run",
    "inferx_core.cli.report",
    "inferx_core.cli.fixes",
    "inferx_core.cli.interop",
    "inferx_core.cli.audit",
    "inferx_core.cli.eval",
    "inferx_core.cli.db",
    "inferx_core.cli.docs",
    "inferx_core.cli.engine",
)


def _extra_commands() -> list[Callable[[Any], None]]:
    import importlib

    return [importlib.import_module(m).register_command for m in _EXTRA_COMMAND_MODULES]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["--version"], ["-V"]):
        # Fast path: no parser, no imports beyond the version constant.
        sys.stdout.write(f"inferx {__version__}\n")
        return 0
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    from inferx_core.sdk.log import configure_logging

    configure_logging(args.log_format, args.log_level)
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        from inferx_core.launch.interrupts import exit_code

        sys.stderr.write("interrupted\n")
        return exit_code(130)  # 128 + the signal: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP
    except Exception as exc:
        from inferx_core.errors import user_error_message

        message = user_error_message(exc)
        if message is None:
            raise
        from inferx_core.sdk.redact import redact_text

        sys.stderr.write(f"inferx: error: {redact_text(message)}\n")  # a URL's password
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
