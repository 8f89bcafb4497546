"""A repeated probe's verdict is one real run's, and its point result is that run.

Found on the real vLLM CPU engine: a probe run twice scored 0.94 and 1.005; the search
averaged them (0.973, pass) while the repeats machinery kept the run of median
throughput as the point (1.005, a failing run), so the points read back as a sweep
disagreed with the search's capacity. Now the probe's score is its median run's (of
an even count, the upper middle one: the stricter) and the point is that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from result_factory import make_result

from inferx_core.config.models import Workload
from inferx_core.config.points import LoadPoint
from inferx_core.config.search import SearchConfig
from inferx_core.metrics.search import Measurement, verdict_run
from inferx_core.pipeline.point.measure import PointOutcome
from inferx_core.pipeline.search.driver import SearchPlan, search_probes
from inferx_core.results.model import parse_result

scores = st.lists(st.floats(0.01, 10, allow_nan=False), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(scores)
def test_the_verdict_run_is_the_upper_median_run(values: list[float]) -> None:
    runs = [Measurement(v) for v in values]
    index = verdict_run(runs)
    assert index is not None
    assert values[index] == sorted(values)[len(values) // 2]


def test_no_judged_run_has_no_verdict_run() -> None:
    assert verdict_run([Measurement(None, reason="failed")]) is None
    assert verdict_run([]) is None


#: p99 TTFT (ms) and output throughput of each run at each concurrency: c1 passes far
#: from the 100 ms limit; c2 is near it, run twice: 94 then 100.5 ms; the 94 ms run has
#: the lower throughput, so the median-throughput rule would keep it; c3 fails far.
RUNS: dict[int, list[tuple[float, float]]] = {
    1: [(40.0, 500.0)],
    2: [(94.0, 800.0), (100.5, 900.0)],
    3: [(300.0, 900.0)],
}


def _runner() -> Any:
    done: dict[int, int] = {}

    def run_probe(point: LoadPoint, pid: str, folder: Path | None, tag: dict) -> PointOutcome:
        level = int(point.concurrency or 0)
        ttft, tput = RUNS[level][done.get(level, 0)]
        done[level] = done.get(level, 0) + 1
        data = make_result(pid, concurrency=level, tput_per_gpu=tput / 0.5)
        data["p99_ttft_ms"] = ttft
        return PointOutcome(pid, parse_result(data))

    return run_probe


def test_a_repeated_probe_is_its_verdict_run_in_the_summary_and_the_point() -> None:
    search = SearchConfig(
        over="concurrency", slo={"p99_ttft_ms": 100}, max=3, max_runs=2, noise=0.1
    )
    plan = SearchPlan(search, Workload(isl=16, osl=4), "t", None, _runner())
    run = search_probes(plan)
    s = run.summary
    [c2] = [p for p in s.probes if p.level == 2]
    assert (c2.runs, c2.state, c2.score) == (2, "fail", 1.005)  # the stricter run, not 0.97
    assert (s.status, s.capacity) == ("found", 1)
    point = {int(o.result.identity.concurrency): o for o in run.outcomes}[2]
    assert point.result.flat()["p99_ttft_ms"] == 100.5  # the point is the run judged
    assert point.result.repeats is not None and point.result.repeats.chosen == 2
