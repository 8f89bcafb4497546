"""The typed result model: schema-1 migration, the flat view, the writer and the schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from result_factory import make_result

from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.summarize import summarize
from inferx_core.results.files import is_complete, read_result, write_result
from inferx_core.results.model import (
    FailedResult,
    OkResult,
    ResultSchemaError,
    parse_result,
    result_json_schema,
)

SCHEMA1 = Path(__file__).parent / "data" / "schema1"
MS = 1_000_000


@pytest.fixture(params=sorted(p.name for p in SCHEMA1.glob("*.json")))
def schema1_file(request: pytest.FixtureRequest) -> dict:
    return json.loads((SCHEMA1 / request.param).read_text())


def test_schema1_files_migrate_without_losing_a_field(schema1_file: dict) -> None:
    result = parse_result(schema1_file)
    flat = result.flat()
    assert set(schema1_file) <= set(flat)
    assert {k: flat[k] for k in schema1_file} == schema1_file
    assert result.provenance.extra == {}  # every schema-1 key found its section
    assert parse_result(flat) == result  # the flat view is a schema-1 file again


def test_schema1_ok_bench_is_typed_in_sections() -> None:
    data = json.loads((SCHEMA1 / "v1-bench-completions-isl16-osl8-c2.json").read_text())
    result = parse_result(data)
    assert isinstance(result, OkResult)
    assert result.identity.mode == "closed" and result.identity.concurrency == 2
    assert result.identity.request_rate is None and result.identity.load_level == 2.0
    assert result.load.completed == data["completed"] == 6
    assert result.latency.ttft_ms.percentiles["p99"] == data["p99_ttft_ms"]
    assert result.latency.ttft_ms.median == data["median_ttft_ms"]
    assert result.throughput.output_throughput == data["output_throughput"]
    assert result.throughput.goodput_slos == {"ttft_ms": 50.0}
    assert result.telemetry is not None and result.telemetry.gpu.power_valid is False
    assert result.metric("median_intvty") == data["median_intvty"]
    assert result.metric("median_tpot") == data["median_tpot"]  # seconds, InferenceX


def test_schema1_failed_open_loop_point_keeps_its_level() -> None:
    data = json.loads((SCHEMA1 / "v1-fail-completions-isl16-osl8-r4-cap3.json").read_text())
    result = parse_result(data)
    assert isinstance(result, FailedResult)
    assert result.identity.mode == "open"
    assert (result.identity.request_rate, result.identity.max_concurrency) == (4.0, 3)
    assert result.load is not None and result.load.completed == 0
    assert result.failure_reason == "no request completed successfully"


def test_schema1_never_ran_point_has_no_measured_sections() -> None:
    result = parse_result(json.loads((SCHEMA1 / "v1-run-never-ran.json").read_text()))
    assert isinstance(result, FailedResult)
    assert not result.measured and result.metrics() is None
    assert result.latency is None and result.throughput is None and result.load is None
    # schema 1 wrote no load level for these: only the migration reads it from the id
    assert (result.identity.mode, result.identity.concurrency) == ("closed", 4)
    assert result.provenance.engine is not None and result.provenance.engine.name == "fake"


def test_an_ok_result_must_have_its_measured_sections() -> None:
    data = json.loads((SCHEMA1 / "v1-run-never-ran.json").read_text())
    data["status"] = "ok"
    with pytest.raises(ValidationError):
        parse_result(data)


def test_unknown_schema_version_is_a_clear_error() -> None:
    with pytest.raises(ResultSchemaError, match="schema_version 7"):
        parse_result({"schema_version": 7, "point_id": "x"})


def test_writer_round_trips_and_resume_reads_the_model(tmp_path: Path) -> None:
    data = json.loads((SCHEMA1 / "v1-bench-completions-isl16-osl8-c2.json").read_text())
    result = parse_result(data)
    path = write_result(tmp_path, result)
    on_disk = json.loads(path.read_text())
    assert on_disk["schema_version"] == 2 and on_disk["identity"]["point_id"] == result.point_id
    assert read_result(path) == result
    assert is_complete(tmp_path, result.point_id)
    failed = parse_result(json.loads((SCHEMA1 / "v1-run-never-ran.json").read_text()))
    write_result(tmp_path, failed)
    assert not is_complete(tmp_path, failed.point_id)


def test_result_json_schema_is_a_discriminated_union() -> None:
    schema = result_json_schema()
    assert schema["discriminator"]["propertyName"] == "status"
    assert set(schema["discriminator"]["mapping"]) == {"ok", "invalid", "failed", "interrupted"}
    out = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "schema", "result"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == schema


def _record(i: int, ttft_ms: int, gaps_ms: list[int], ok: bool) -> RequestRecord:
    send = i * 1000 * MS
    chunks: list[int] = []
    t = send + ttft_ms * MS
    for gap in [0, *gaps_ms]:
        t += gap * MS
        chunks.append(t)
    return RequestRecord(
        request_id=i,
        prompt_tokens=8,
        max_tokens=len(chunks),
        send_ns=send,
        chunk_ns=chunks if ok else [],
        usage_output_tokens=len(chunks) if ok else None,
        error=None if ok else "boom",
        error_kind=None if ok else "http",
    )


requests = st.lists(
    st.tuples(st.integers(0, 500), st.lists(st.integers(0, 50), max_size=6), st.booleans()),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(requests, st.booleans())
def test_sections_and_flat_view_agree_with_summarize(reqs: list, with_slo: bool) -> None:
    records = [_record(i, t, g, ok) for i, (t, g, ok) in enumerate(reqs)]
    flat = summarize(
        records,
        window_start_ns=0,
        window_end_ns=len(records) * 1000 * MS + 1,
        num_gpus=2,
        slos={"ttft_ms": 100} if with_slo else None,
    )
    metrics = PointMetrics.from_flat(flat)
    assert metrics.flat() == flat  # same keys, same values, same order
    assert list(metrics.flat()) == list(flat)
    assert PointMetrics.from_flat(metrics.flat()) == metrics


def test_read_result_takes_a_path_or_a_string(tmp_path: Path) -> None:
    from inferx_core.api import read_result

    point = tmp_path / "point.json"
    point.write_text(json.dumps(make_result("p-c1")))
    assert read_result(str(point)).point_id == read_result(point).point_id


def test_reasoning_and_speculative_figures_survive_the_flat_view() -> None:
    """The flat view carries them (reasoning keys, spec_* from the telemetry window) and is
    a schema-1 file again: nothing lands in provenance.extra, nothing is lost."""
    from inferx_core.metrics.model import Distribution, ReasoningStats

    result = parse_result(
        json.loads((SCHEMA1 / "v1-bench-completions-isl16-osl8-c2.json").read_text())
    )
    reasoning = ReasoningStats(
        requests=6,
        total_reasoning_tokens=36,
        reasoning_token_sources={"usage": 6, "chunk_tokens": 0, "chunk_count": 0},
        no_answer_requests=0,
        ttfo_ms=Distribution(mean=12.0, median=11.0, std=1.0, percentiles={"p99": 14.0}),
        tpot_answer_ms=Distribution(mean=2.0, median=2.0, std=0.1, percentiles={"p99": 2.5}),
    )
    assert result.telemetry is not None
    window = {"source": "counters", "acceptance_rate": 0.5, "mean_acceptance_length": 2.5,
              "acceptance_per_position": [0.9, 0.6], "drafts": 10.0, "draft_tokens": 30.0,
              "accepted_tokens": 15.0, "out_of_bounds": {}}  # fmt: skip
    telemetry = result.telemetry.model_copy(update={"engine_metrics": {"spec_decode": window}})
    rich = result.model_copy(update={"reasoning": reasoning, "telemetry": telemetry})
    flat = rich.flat()
    assert flat["median_ttfo_ms"] == 11.0 and flat["total_reasoning_tokens"] == 36
    assert flat["spec_mean_acceptance_length"] == 2.5 and flat["spec_drafts"] == 10.0
    again = parse_result(flat)
    assert again.provenance.extra == {} and again == rich
