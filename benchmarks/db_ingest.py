"""Ingest of 10,000 points into the results database (DuckDB, and PostgreSQL when its
server binaries are here), re-ingest of the same points, and queries over them.

    .venv/bin/python benchmarks/db_ingest.py [--points 10000] [--no-postgres]

Writes synthetic nightly folders (benchmarks/synthetic_results.py), then times
``inferx db ingest`` per nightly folder with its label (what a nightly job
does), the same again (idempotent: nothing stored), listing all points, a
filtered list, and a ``db regress`` of the last night against the one before.
Goal: 10,000 points ingested in under 60 s on the 2-core VM.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

from synthetic_results import write_nights

from inferx_core.db.ingest import ingest_paths
from inferx_core.db.regress import regress
from inferx_core.db.store import Filters, open_db

GOAL_S = 60.0


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure(url: str, nights: list[tuple[str, Path]]) -> dict[str, float]:
    out: dict[str, float] = {}
    with open_db(url) as db:
        out["ingest"], stored = _timed(
            lambda: sum(len(ingest_paths(db, [f], label).stored) for label, f in nights)
        )
        out["stored"] = stored
        out["again"], again = _timed(
            lambda: sum(len(ingest_paths(db, [f], label).stored) for label, f in nights)
        )
        assert again == 0, again
        out["list_all"], rows = _timed(lambda: db.points())
        out["rows"] = len(rows)
        query = Filters(hardware=["H200"], engine=["vllm"], isl=[1024], osl=[1024])
        out["list_filtered"], _ = _timed(lambda: db.points(query))
        base, cand = nights[-2][0], nights[-1][0]
        out["regress"], _ = _timed(lambda: regress(db, base, cand))
    return out


def _postgres(tmp: Path):
    """A throwaway PostgreSQL server (the tests' fixture code), or None."""
    path = Path(__file__).resolve().parents[1] / "tests" / "db" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_pg_fixture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    bin_dir = module.pg_bin()
    if bin_dir is None:
        return None, None
    try:
        server = module._start(bin_dir)
    except BaseException as exc:  # pytest.skip outside pytest
        print(f"no PostgreSQL: {exc}")
        return None, None
    return server, bin_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="inferx-bench-db-"))
    try:
        t, nights = _timed(lambda: write_nights(tmp / "results", args.points))
        print(f"wrote {args.points} result files in {len(nights)} nightly folders ({t:.1f} s)")
        backends = [("duckdb", str(tmp / "bench.duckdb"))]
        server = bin_dir = None
        if not args.no_postgres:
            server, bin_dir = _postgres(tmp)
            if server is not None:
                backends.append(("postgresql", server.new_database()))
        print(f"{'backend':<12}{'ingest s':>9}{'pts/s':>8}{'again s':>9}{'list all s':>11}"
              f"{'filtered s':>11}{'regress s':>10}")  # fmt: skip
        worst = 0.0
        for name, url in backends:
            m = measure(url, nights)
            worst = max(worst, m["ingest"])
            print(f"{name:<12}{m['ingest']:>9.1f}{m['stored'] / m['ingest']:>8.0f}"
                  f"{m['again']:>9.1f}{m['list_all']:>11.2f}{m['list_filtered']:>11.3f}"
                  f"{m['regress']:>10.2f}")  # fmt: skip
        if server is not None:
            server.run(str(bin_dir / "pg_ctl"), "-D", str(server.root / "data"), "-m", "fast",
                       "stop")  # fmt: skip
            shutil.rmtree(server.root, ignore_errors=True)
        verdict = "met" if worst < GOAL_S else "MISSED"
        print(f"goal: {args.points} points ingested in under {GOAL_S:.0f} s: {verdict}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
