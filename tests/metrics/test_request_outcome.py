"""One place decides a request's outcome (verifier finding F1, issue 38 item 2).

A shedding server answers past its slots at once with one token and ``finish_reason:
stop`` although ``ignore_eos`` was sent. Validity called those replies failed
(``short_reply``) while the written result counted them completed and GOOD. Now
:func:`~inferx_core.metrics.requests.judged_request` decides for every consumer:
the counts, the failure kinds, goodput, the latency populations, validity and the
sidecar check on resume all agree, asserted here on the files the CLI wrote.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.app import main
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.dimensions import turn_stats
from inferx_core.metrics.requests import failure_kind, judged_request
from inferx_core.metrics.summarize import summarize
from inferx_core.results.read import load_results, read_request_records, sidecar_mismatch
from inferx_core.testing import ServerProcess

LENIENT = {"max_loop_lag_p95_ms": 1000, "max_client_cpu_fraction": 1.0}


def _bench(url: str, out: Path) -> None:
    config = out.parent / "bench.json"
    config.write_text(json.dumps({"base_url": url, "validity": LENIENT}))
    argv = [
        *("bench", str(config), "--isl", "16", "--osl", "8", "--num-prompts", "32"),
        *("--concurrency", "8", "--slo", "ttft_ms=1000", "--output", str(out)),
        *("--no-telemetry", "--no-progress"),
    ]
    assert main(argv) in (0, 1)


def test_a_shed_reply_is_failed_in_every_figure_of_the_written_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ServerProcess(ttft_ms=5, itl_ms=10, max_concurrent=2, overload="shed") as server:
        _bench(server.base_url, out)
    [path] = out.glob("*.json")
    flat: dict[str, Any] = json.loads(path.read_text())
    load, thr, validity = flat["load"], flat["throughput"], flat["validity"]
    records = [r for r in read_request_records(path) or [] if not r.warmup]
    shed = [r for r in records if failure_kind(r, ignore_eos=True) == "short_reply"]
    # 8 in flight against 2 slots: most are shed (a loaded machine may serve a few more)
    assert len(shed) >= 8, [(r.finish_reason, r.output_tokens) for r in records]
    # the counts and kinds say what validity says
    assert load["failed"] == len(shed) and load["completed"] == len(records) - len(shed)
    assert load["failed_by_kind"] == {"short_reply": len(shed)}
    [err] = [c for c in validity["checks"] if c["name"] == "error_rate"]
    assert f"{len(shed)} of {len(records)} requests failed (short_reply {len(shed)})" in err["why"]
    assert flat["status"] == "invalid"
    # failed requests are never good: the generous 1 s TTFT limit is met by every reply
    assert thr["good_completed"] <= load["completed"]
    assert thr["request_goodput"] <= thr["request_throughput"]
    assert thr["request_throughput"] * load["duration"] == pytest.approx(load["completed"])
    # the latency populations are the completed replies only: the shed ones' instant
    # "first token" is not a TTFT
    kept = [m.ttft_ms for r in records if (m := judged_request(r, ignore_eos=True)).ok]
    assert len(kept) == load["completed"]
    assert flat["latency"]["ttft_ms"]["median"] == pytest.approx(statistics.median(kept))
    assert all(s["error_kind"] == "short_reply" for s in load["error_samples"])
    assert "ignore_eos was sent" in load["error_samples"][0]["error"]
    # a resume reads this file back as its own: the sidecar agrees with the counts
    [result] = load_results([out]).results
    assert sidecar_mismatch(result, read_request_records(path) or []) is None
    # InferX's vLLM export writes them as vLLM writes a failed request, so an import of
    # it (and a report --slo on that) sees the failures (verifier finding F7)
    exported = tmp_path / "vllm"
    argv = ["export", str(out), "--format", "vllm", "--detailed", "--output", str(exported)]
    assert main(argv) == 0
    [vllm_file] = exported.glob("*.json")
    vllm = json.loads(vllm_file.read_text())
    assert (vllm["completed"], vllm["failed"]) == (load["completed"], load["failed"])
    assert sum("ignore_eos was sent" in e for e in vllm["errors"]) == len(shed)
    imported = tmp_path / "imported"
    assert main(["import", str(vllm_file), "--output", str(imported)]) == 0
    [back] = load_results([imported]).results
    assert back.load is not None and back.load.failed == len(shed)
    assert back.status == "invalid"


def _reply(i: int, tokens: int, finish: str, turn: int | None = None) -> RequestRecord:
    chunks = [1_000_000 * (10 + k) for k in range(tokens)]
    return RequestRecord(
        request_id=i,
        prompt_tokens=8,
        max_tokens=8,
        send_ns=1,
        chunk_ns=chunks,
        usage_output_tokens=tokens,
        finish_reason=finish,
        end_ns=chunks[-1],
        turn=turn,
    )


def test_the_per_turn_figures_count_a_short_reply_as_the_point_does() -> None:
    records = [_reply(0, 8, "length", turn=0), _reply(1, 1, "stop", turn=0)]
    flat = summarize(records, window_start_ns=0, window_end_ns=10**9, ignore_eos=True)
    [row] = turn_stats(records, ignore_eos=True) or []
    assert row.completed == flat["completed"] == 1 and flat["failed_by_kind"] == {"short_reply": 1}
    # without ignore_eos a stop is the model's own end: both complete, everywhere alike
    [row] = turn_stats(records) or []
    assert row.completed == summarize(records, window_start_ns=0, window_end_ns=10**9)["completed"]


def test_the_parquet_export_and_compare_count_a_shed_reply_as_the_point_does(
    tmp_path: Path,
) -> None:
    """Leftover of F1's class: ``requests.parquet`` and ``inferx compare``'s per-request
    CI decided success on their own (the transport's ``ok``), so a shed one-token reply
    was an ok row with a TTFT of a few ms."""
    import pyarrow.parquet as pq

    from inferx_core.analysis.compare import load_side

    out = tmp_path / "out"
    with ServerProcess(ttft_ms=5, itl_ms=10, max_concurrent=2, overload="shed") as server:
        _bench(server.base_url, out)
    [path] = out.glob("*.json")
    flat: dict[str, Any] = json.loads(path.read_text())
    load = flat["load"]
    assert load["failed_by_kind"].get("short_reply", 0) >= 8, load  # 8 in flight, 2 slots
    exported = tmp_path / "tables"
    assert main(["export", str(out), "--format", "parquet", "--output", str(exported)]) == 0
    rows = [r for r in pq.read_table(exported / "requests.parquet").to_pylist() if not r["warmup"]]
    ok = [r for r in rows if r["ok"]]
    assert len(ok) == load["completed"]
    kinds = [r["failure_kind"] for r in rows if not r["ok"]]
    assert kinds.count("short_reply") == load["failed_by_kind"]["short_reply"] == len(kinds)
    assert all(r["ttft_ms"] is None and r["output_tokens"] is None for r in rows if not r["ok"])
    assert statistics.median(r["ttft_ms"] for r in ok) == pytest.approx(
        flat["latency"]["ttft_ms"]["median"]
    )
    # compare's median CI reads the written sidecar: only the completed replies are samples
    side = load_side("a", [out])
    [point_id] = [r["point_id"] for r in side.rows]
    samples = side.samples(point_id) or {}
    assert sorted(samples["ttft"]) == pytest.approx(sorted(r["ttft_ms"] for r in ok))
