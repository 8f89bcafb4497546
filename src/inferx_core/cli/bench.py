"""``inferx bench``: benchmark a server that is already running."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferx_core.cli.db import add_db_arguments, db_ingester
from inferx_core.cli.interop import add_export_arguments, point_exporter, print_export_report
from inferx_core.cli.numbers import Bounds, number, numbers
from inferx_core.cli.search import add_search_arguments, cmd_search, search_flags, slo_pairs
from inferx_core.cli.validity import add_validity_arguments, failed_points
from inferx_core.config.bounds import (
    MAX_CONCURRENCY,
    MAX_PROMPTS,
    MAX_REPEATS,
    MAX_SEED,
    MAX_TOKENS,
    MAX_TURNS,
)

if TYPE_CHECKING:
    from inferx_core.config.models import BenchConfig

# The argparse types of the numeric flags: the config's own limits, checked while
# parsing so a bad number is one line naming the flag (nan, a negative, 1e13).
_POSITIVE = number(float, Bounds(low=0, low_open=True))
_SECONDS = number(float, Bounds(low=0, low_open=True, unit="s"))
_TOKENS = number(int, Bounds(low=1, high=MAX_TOKENS, unit="tokens"))
_PROMPTS = number(int, Bounds(low=1, high=MAX_PROMPTS, unit="prompts"))
_SLOTS = number(int, Bounds(low=1, high=MAX_CONCURRENCY))
_RATES = numbers(
    float, Bounds(low=0, low_open=True, allow_inf=True, inf_means="every request at once")
)


def register_command(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark an OpenAI-compatible server that is already running",
        description="Drive a running server with streaming requests and write one result "
        "per load point. Flags override the config file.",
    )
    p.add_argument("config", nargs="?", help="bench config (YAML/JSON with base_url:)")
    p.add_argument("--base-url", help="e.g. http://127.0.0.1:8000")
    p.add_argument("--model", help="served model name (default: first of /v1/models)")
    p.add_argument("--name", help="label used in result ids")
    _add_workload_arguments(p)
    _add_load_arguments(p)
    p.add_argument("--slo", type=slo_pairs, help="e.g. ttft_ms=500,tpot_ms=30")
    add_search_arguments(p)
    p.add_argument(
        "--num-gpus",
        type=number(int, Bounds(low=1)),
        help="GPUs behind the server (per-GPU throughput)",
    )
    p.add_argument(
        "--gpus",
        type=numbers(int, Bounds(low=0)),
        help="local GPUs to sample (default: all visible)",
    )
    p.add_argument("--engine", help="engine behind the server (to scrape its /metrics)")
    p.add_argument("--no-telemetry", action="store_true", help="do not sample power/host/metrics")
    p.add_argument(
        "--percentiles",
        type=numbers(float, Bounds(config_checks=True)),  # its message names [0, 100]
        help="default 50,90,99,99.9",
    )
    p.add_argument("--output", help="results folder (default results/)")
    p.add_argument(
        "--resume", action="store_true", help="skip points whose result in --output is complete"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--no-progress", action="store_true")
    add_export_arguments(p)
    add_db_arguments(p)
    add_validity_arguments(p)
    p.add_argument(
        "--repeats",
        type=number(int, Bounds(low=1, high=MAX_REPEATS)),
        metavar="N",
        help="run every point N times, interleaved: the median run, with min-max and 95%% CI",
    )
    p.add_argument(
        "--workers",
        type=number(int, Bounds(low=1, high=512)),
        metavar="N",
        help="load generator processes sharing one schedule (default: one per two client "
        "CPUs, 1 to 8; `inferx docs scale-out`)",
    )
    p.set_defaults(handler=cmd_bench)


def _add_load_arguments(p: argparse.ArgumentParser) -> None:
    """How hard to push: the levels, arrivals, counts and timeouts (``load:``)."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--concurrency",
        type=numbers(int, Bounds(low=1, high=MAX_CONCURRENCY)),
        help="closed loop levels, e.g. 1,4,16",
    )
    mode.add_argument(
        "--request-rate",
        type=_RATES,
        help="open loop rates (req/s), e.g. 1,4,inf (inf: every request at once, as vLLM's)",
    )
    p.add_argument("--arrival", choices=("poisson", "constant"))
    p.add_argument(
        "--burstiness",
        type=_POSITIVE,
        metavar="B",
        help="poisson arrivals: gamma shape of the gaps (1: Poisson, <1 burstier)",
    )
    p.add_argument(
        "--ramp",
        choices=("linear", "exponential"),
        help="open loop: ramp from --ramp-start-rps up to each --request-rate",
    )
    p.add_argument("--ramp-start-rps", type=_POSITIVE, metavar="R", help="the ramp's first rate")
    p.add_argument("--max-concurrency", type=_SLOTS, help="cap for open loop")
    p.add_argument("--num-prompts", type=_PROMPTS, help=f"measured prompts (at most {MAX_PROMPTS})")
    p.add_argument("--duration", type=_SECONDS, help="seconds; stop dispatching after")
    p.add_argument(
        "--warmup",
        type=number(int, Bounds(low=0, high=MAX_PROMPTS)),
        help="warmup requests (default: one per slot)",
    )
    p.add_argument("--timeout", type=_SECONDS, help="per-request timeout (s)")
    p.add_argument(
        "--first-token-timeout", type=_SECONDS, help="first token within (s, default 300)"
    )
    p.add_argument(
        "--idle-timeout", type=_SECONDS, help="no gap between tokens over (s, default 60)"
    )


def _add_workload_arguments(p: argparse.ArgumentParser) -> None:
    """What each request asks for: lengths, the workload kind and its files."""
    p.add_argument("--api", choices=("completions", "chat"))
    p.add_argument("--isl", type=_TOKENS, help="input length (tokens)")
    p.add_argument("--osl", type=_TOKENS, help="output length (tokens)")
    p.add_argument("--range-ratio", type=number(float, Bounds(low=0, high=1)))
    p.add_argument("--range-semantics", choices=("inferencex", "vllm", "sglang", "fixed"))
    p.add_argument(
        "--workload", choices=("random", "lognormal", "dataset", "trace", "multi-turn"), dest="kind"
    )
    p.add_argument(
        "--turns",
        type=number(int, Bounds(low=1, high=MAX_TURNS)),
        metavar="N",
        help="multi-turn: turns per session",
    )
    p.add_argument(
        "--think-time",
        type=number(float, Bounds(low=0, unit="s")),
        metavar="S",
        help="multi-turn: s between turns",
    )
    p.add_argument("--turn-isl", type=_TOKENS, help="multi-turn: tokens of each new user message")
    p.add_argument("--turn-osl", type=_TOKENS, help="multi-turn: output tokens of each turn")
    p.add_argument("--dataset", help="JSONL prompts file (implies --workload dataset)")
    p.add_argument(
        "--dataset-max-line-bytes",
        type=number(int, Bounds(low=1024, high=2**31)),
        metavar="BYTES",
        help="refuse a dataset line (or a record's prompt) longer than this (default 16 MiB)",
    )
    p.add_argument("--tokenizer", help="local tokenizer.json when the server has no /tokenize")
    p.add_argument("--no-ignore-eos", action="store_true", help="let the model stop early")
    p.add_argument("--seed", type=number(int, Bounds(low=0, high=MAX_SEED)))
    p.add_argument(
        "--shared-prefix",
        type=number(int, Bounds(low=0, high=MAX_TOKENS, unit="tokens")),
        metavar="TOKENS",
        help="prompts of a group start with the same TOKENS tokens (prefix-cache workloads)",
    )
    p.add_argument(
        "--prefix-groups",
        type=number(int, Bounds(low=1, high=MAX_PROMPTS)),
        metavar="K",
        help="distinct shared prefixes",
    )
    _add_trace_arguments(p)


def _add_trace_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace", metavar="FILE", help="replay a timestamped trace (implies --workload trace)"
    )
    p.add_argument("--trace-format", choices=("mooncake", "azure", "inferx"))
    p.add_argument(
        "--trace-speedup", type=_POSITIVE, metavar="X", help="replay X times faster (default 1)"
    )
    p.add_argument(
        "--trace-window",
        metavar="START:END",
        help="replay [START, END) seconds of trace time, e.g. 60:120 or 600:",
    )
    p.add_argument(
        "--max-model-len",
        type=_TOKENS,
        metavar="N",
        help="context length: dataset/trace prompts over it are skipped and counted "
        "(default: the server's /v1/models max_model_len)",
    )


# (argparse dest, key) for flags that override the config file when given.
_TOP_FLAGS = (
    ("base_url", "base_url"),
    ("model", "model"),
    ("name", "name"),
    ("num_gpus", "num_gpus"),
    ("percentiles", "percentiles"),
    ("output", "output_dir"),
    ("engine", "engine"),
    ("gpus", "gpus"),
)
_WORKLOAD_FLAGS = (
    ("api", "api"),
    ("isl", "isl"),
    ("osl", "osl"),
    ("range_ratio", "range_ratio"),
    ("range_semantics", "range_semantics"),
    ("kind", "kind"),
    ("turns", "turns"),
    ("think_time", "think_time_s"),
    ("turn_isl", "turn_isl"),
    ("turn_osl", "turn_osl"),
    ("dataset", "dataset"),
    ("dataset_max_line_bytes", "dataset_max_line_bytes"),
    ("tokenizer", "tokenizer"),
    ("seed", "seed"),
    ("shared_prefix", "shared_prefix"),
    ("prefix_groups", "prefix_groups"),
    ("trace", "trace"),
    ("trace_format", "trace_format"),
    ("trace_speedup", "trace_speedup"),
    ("trace_window", "trace_window"),
    ("max_model_len", "max_model_len"),
)
_LOAD_FLAGS = (
    ("arrival", "arrival"),
    ("burstiness", "burstiness"),
    ("ramp", "ramp"),
    ("ramp_start_rps", "ramp_start_rps"),
    ("max_concurrency", "max_concurrency"),
    ("num_prompts", "num_prompts"),
    ("duration", "duration_s"),
    ("warmup", "warmup"),
    ("timeout", "request_timeout_s"),
    ("first_token_timeout", "first_token_timeout_s"),
    ("idle_timeout", "idle_timeout_s"),
    ("repeats", "repeats"),
    ("workers", "workers"),
)


def _copy_given(args: argparse.Namespace, flags: tuple[tuple[str, str], ...], into: dict) -> None:
    for flag, key in flags:
        if getattr(args, flag) is not None:
            into[key] = getattr(args, flag)


def _config_file_data(args: argparse.Namespace) -> dict[str, Any]:
    """The --config file's settings as a dict (empty without one); refuses a run config."""
    from inferx_core.config.loader import load_config
    from inferx_core.config.models import BenchConfig
    from inferx_core.errors import UserFacingError

    if not args.config:
        return {}
    # --search/--slo fill the file's search: before it is validated (it may lack its slo)
    loaded = load_config(args.config, overlay=lambda data: search_flags(args, data))
    if not isinstance(loaded, BenchConfig):
        raise UserFacingError(
            f"{args.config} is a run config (engine:); `inferx bench` needs base_url:. "
            "Use `inferx run` to launch an engine."
        )
    return loaded.model_dump(exclude_unset=True)


# Flags of an open loop only (argparse dests).
_OPEN_LOOP_ONLY = ("arrival", "burstiness", "ramp", "ramp_start_rps", "max_concurrency")


def _refuse_unused(
    args: argparse.Namespace, load: dict[str, Any], workload: dict, rate_search: bool = False
) -> None:
    """Open-loop flags without an open loop would be ignored: say so instead. A trace is an
    open loop of its own: ``--max-concurrency`` caps its requests in flight (docs/workloads.md),
    as ``load.max_concurrency`` does in a config; so is a rate search (``--search rate``),
    whose probes take ``--arrival`` and the rest as a config's ``load:`` gives them."""
    from inferx_core.errors import UserFacingError

    trace = workload.get("trace") is not None or workload.get("kind") == "trace"
    if load.get("request_rate") is None and not rate_search:
        given = [
            f"--{d.replace('_', '-')}"
            for d in _OPEN_LOOP_ONLY
            if getattr(args, d) is not None and not (trace and d == "max_concurrency")
        ]
        if given:
            raise UserFacingError(
                f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to an open loop "
                "only; add --request-rate RATES "
                "(closed loop: --concurrency sets the requests in flight)"
            )


def _apply_flags(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """Lay the command-line flags over ``data`` (flags win)."""
    workload = data.setdefault("workload", {})
    load = data.setdefault("load", {})
    _copy_given(args, _TOP_FLAGS, data)
    _copy_given(args, _WORKLOAD_FLAGS, workload)
    if args.no_telemetry:
        data["telemetry"] = False
    if args.no_ignore_eos:
        workload["ignore_eos"] = False
    if args.concurrency is not None:
        load["concurrency"], load["request_rate"] = args.concurrency, None
    if args.request_rate is not None:
        load["request_rate"], load["concurrency"] = args.request_rate, None
    _copy_given(args, _LOAD_FLAGS, load)
    search = data.get("search") or {}
    _refuse_unused(args, load, workload, args.search == "rate" or search.get("over") == "rate")
    if search_flags(args, data):
        return  # --slo is the search's constraint
    if args.slo:
        data["slo"] = {**(data.get("slo") or {}), **args.slo}


def bench_config_from_args(args: argparse.Namespace) -> BenchConfig:
    from pydantic import ValidationError

    from inferx_core.config.loader import ConfigError, format_validation_error
    from inferx_core.config.models import BenchConfig
    from inferx_core.errors import UserFacingError

    data = _config_file_data(args)
    _apply_flags(args, data)
    if "base_url" not in data:
        raise UserFacingError("give --base-url URL (or a config file with base_url:)")
    try:
        return BenchConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            args.config or "command line", format_validation_error(exc, BenchConfig, {})
        ) from None


def cmd_bench(args: argparse.Namespace) -> int:
    import json
    import sys

    from inferx_core.pipeline.bench.points import bench_points
    from inferx_core.report.console import print_summary

    config = bench_config_from_args(args)
    if args.resume and config.output_dir is None:
        from inferx_core.errors import UserFacingError

        raise UserFacingError(
            "--resume reads the output folder: give --output DIR (or output_dir:)"
        )
    exporter = point_exporter(args, config.output_dir or Path("results"))
    if config.search is not None:
        return cmd_search(args, config, db_ingester(args, exporter))
    progress = False if args.no_progress else None
    skipped: list[str] = []
    outcomes = bench_points(
        config,
        progress=progress,
        on_point=db_ingester(args, exporter),
        resume=args.resume,
        on_skip=skipped.append,
    )
    results = [o.result for o in outcomes]
    if args.json:
        dumped = [r.model_dump(mode="json") for r in results]
        sys.stdout.write(json.dumps(dumped, indent=2, allow_nan=False) + "\n")
    else:
        print_summary(results, title=f"inferx bench {config.base_url}")
        if skipped:
            print(f"skipped (already complete, --resume): {', '.join(skipped)}")
        if config.output_dir:
            print(f"results: {config.output_dir}/")
    export_failed = exporter is not None and print_export_report(exporter.report, sys.stderr)
    return 0 if not failed_points(outcomes, args) and not export_failed else 1
