"""How long `inferx --version` and `inferx --help` take above bare interpreter start.

Goal: under 0.3 s above `python -c pass`. Runs the three commands interleaved
(so machine noise hits all alike) and prints medians side by side.

    .venv/bin/python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "inferx --version": [sys.executable, "-m", "inferx_core.cli.main", "--version"],
    "inferx --help": [sys.executable, "-m", "inferx_core.cli.main", "--help"],
    "inferx plugins --json": [sys.executable, "-m", "inferx_core.cli.main", "plugins", "--json"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, argv in COMMANDS.items():
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<24}{'median s':>10}{'above python':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<24}{median:>10.3f}{median - base:>+14.3f}")
    over = statistics.median(times["inferx --help"]) - base
    print(
        f"goal: --help under +0.300 s above interpreter start: {'met' if over < 0.3 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
