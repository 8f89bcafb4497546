"""The search finds a scripted server's known capacity K exactly (issue 29).

The server serves at most K generations at once (``max_concurrent``); the rest
wait for a slot, so past K some requests' TTFT includes a whole generation
(~100 ms) while at or below K it is ~5 ms. The limit (50 ms) sits far from
both, so a loaded machine moves neither side across it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.config.models import BenchConfig
from inferx_core.pipeline.search import run_search
from inferx_core.results.read import load_results
from inferx_core.results.search_files import load_search_summaries
from inferx_core.testing import ServerProcess

#: 5 ms to the first token, then 5 more tokens 20 ms apart: ~105 ms a generation.
SERVER = {"ttft_ms": 5, "itl_ms": 20}


def _config(base_url: str, out: Path, slo: dict, **search) -> BenchConfig:
    return BenchConfig(
        base_url=base_url,
        output_dir=out,
        telemetry=False,
        workload={"isl": 16, "osl": 6},
        load={"num_prompts": 16},
        search={"over": "concurrency", "slo": slo, "max": 64, **search},
    )


@pytest.mark.parametrize(
    ("capacity", "slo"),
    [
        (1, {"ttft_ms": 50}),
        (3, {"ttft_ms": 50, "tpot_ms": 200}),
        (6, {"ttft_ms": 50}),
        (2, {"p90_ttft_ms": 50}),
    ],
)
def test_the_search_finds_the_known_capacity(capacity: int, slo: dict, tmp_path: Path) -> None:
    with ServerProcess(max_concurrent=capacity, **SERVER) as server:
        run = run_search(_config(server.base_url, tmp_path, slo, max_probes=14), progress=False)
    s = run.summary
    assert (s.status, s.capacity) == ("found", capacity), s.reason
    assert s.first_fail is not None and s.first_fail.level == capacity + 1
    assert s.runs <= 14 and s.binding_slo is not None and "ttft" in s.binding_slo
    # every probe is a normal point result, tagged with its search
    loaded = load_results([tmp_path])
    assert {r.identity.concurrency for r in loaded.results} == {p.level for p in s.probes}
    for result in loaded.results:
        assert result.flat()["search"]["id"] == s.search_id
    assert s.capacity_point_id in {r.point_id for r in loaded.results}
    assert s.at_capacity["output_throughput"] is not None
    # the knee, without the SLO, from the same probes: where throughput stops rising; a
    # 16-prompt probe's throughput moves a few % on a loaded machine, so the flat step
    # K -> K+1 can read as a small rise and the knee as K+1 (seen: K=6, knee 7)
    assert s.knee is not None and capacity <= s.knee.level <= capacity + 1, s.knee
    [again], skipped = load_search_summaries([tmp_path])
    assert again == s and not skipped


def test_an_interrupted_search_resumes_from_its_probes(tmp_path: Path) -> None:
    with ServerProcess(max_concurrent=4, **SERVER) as server:
        cut = run_search(_config(server.base_url, tmp_path, {"ttft_ms": 50}, max_probes=3))
        assert cut.summary.status == "budget" and cut.summary.runs == 3
        skipped: list[str] = []
        whole = run_search(
            _config(server.base_url, tmp_path, {"ttft_ms": 50}),
            resume=True,
            on_skip=skipped.append,
            progress=False,
        )
    assert (whole.summary.status, whole.summary.capacity) == ("found", 4)
    assert len(skipped) == 3  # c1, c2, c4 were read back, not run again
    dates = {json.loads((tmp_path / f"{pid}.json").read_text())["identity"]["date"]
             for pid in skipped}  # fmt: skip
    assert len(dates) == 3


def test_an_invalid_probe_is_not_judged(tmp_path: Path) -> None:
    """Every request fails: the points are not ok, the search says it could not judge."""
    with ServerProcess(fail="http_500", **SERVER) as server:
        run = run_search(_config(server.base_url, tmp_path, {"ttft_ms": 50}), progress=False)
    s = run.summary
    assert s.status == "undetermined" and s.capacity is None
    assert "could not judge level 1" in s.reason and s.probes[0].state == "unknown"
