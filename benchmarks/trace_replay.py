"""How late a trace replay sends its requests: dispatch lateness (send minus the trace's
time) at 100 req/s and at higher rates, against the scripted server.

    .venv/bin/python benchmarks/trace_replay.py [--rates 100 400 1000] [--seconds 10]

A synthetic Mooncake trace per rate: Poisson arrivals (seeded), input lengths
of 1-3 hash blocks (512 tokens each, requests share leading blocks in 8
groups, as an agentic trace does), 8 output tokens. ``inferx bench``'s own
path (``run_bench``, ``workload.kind: trace``) replays it against the scripted
server (5 ms to the first token, 1 ms between tokens); the result's
``latency.dispatch_lateness_ms`` is what is printed, with the achieved rate
and the ``dispatch_lateness`` validity verdict (p99 within 25 ms).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from inferx_core.api import BenchConfig, run_bench
from inferx_core.config.models import LoadProfile, Workload
from inferx_core.demo.tiny_tokenizer import build_tokenizer
from inferx_core.testing import ServerProcess

GOAL_P99_MS = 25.0  # the validity limit (max_dispatch_lateness_p99_ms)
RATE_OF_THE_GOAL = 100.0


def synthetic_trace(path: Path, rate: float, seconds: float, seed: int = 0) -> int:
    """A Mooncake JSONL trace of Poisson arrivals at ``rate`` for ``seconds``; returns its size."""
    rng = random.Random(seed)
    t, rows = 0.0, []
    while t < seconds:
        blocks = rng.randint(1, 3)
        group = rng.randrange(8)
        hash_ids = [group * 100 + b for b in range(blocks)]
        rows.append({
            "timestamp": round(t * 1000, 3),
            "input_length": 512 * (blocks - 1) + rng.randint(64, 512),
            "output_length": 8,
            "hash_ids": hash_ids,
        })  # fmt: skip
        t += rng.expovariate(rate)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def replay(server: ServerProcess, trace: Path, tokenizer: Path) -> dict:
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(trace=trace, trace_format="mooncake", tokenizer=tokenizer),
        load=LoadProfile(),
        output_dir=None,
        telemetry=False,
    )
    [outcome] = run_bench(config, progress=False)
    result = outcome.result
    late = result.latency.dispatch_lateness_ms if result.latency else None
    checks = {c.name: c for c in (result.validity.checks if result.validity else [])}
    check, verdict = checks.get("achieved_rate"), checks.get("dispatch_lateness")
    return {
        "completed": result.load.completed if result.load else 0,
        "late": late,
        "achieved_ratio": check.value if check else None,
        "lateness_ok": verdict.passed if verdict else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[100.0, 400.0, 1000.0])
    ap.add_argument("--seconds", type=float, default=10.0, help="trace length per rate")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(ttft_ms=5, itl_ms=1) as server:
        tokenizer = Path(tmp) / "tokenizer.json"
        build_tokenizer().save(str(tokenizer))
        print(f"{'req/s':>7} {'requests':>8} {'ok':>6} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'max ms':>8} {'achieved':>9} {'p99<=25ms':>9}")  # fmt: skip
        goal_p99 = None
        for rate in args.rates:
            trace = Path(tmp) / f"trace-{rate:g}.jsonl"
            n = synthetic_trace(trace, rate, args.seconds)
            out = replay(server, trace, tokenizer)
            late = out["late"]
            if rate == RATE_OF_THE_GOAL and late is not None:
                goal_p99 = late.p99
            ratio = out["achieved_ratio"]
            print(
                f"{rate:>7g} {n:>8} {out['completed']:>6} "
                f"{late.p50 if late else float('nan'):>8.2f} "
                f"{late.p99 if late else float('nan'):>8.2f} "
                f"{late.max if late else float('nan'):>8.2f} "
                f"{'-' if ratio is None else f'{ratio:.0%}':>9} "
                f"{'yes' if out['lateness_ok'] else 'no':>9}"
            )
    if goal_p99 is not None:
        met = "met" if goal_p99 <= GOAL_P99_MS else "MISSED"
        print(f"goal: p99 dispatch lateness at 100 req/s within {GOAL_P99_MS:g} ms: {met}")


if __name__ == "__main__":
    main()
