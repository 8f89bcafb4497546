"""The vLLM export: vLLM bench serve's field list, units, definitions and empty-sample policy.

Expected values are computed here from the records by hand (the contract in
our words, read from vllm/benchmarks/serve.py), never by the code under test.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.models import SLO, BenchConfig, LoadProfile, Workload
from inferx_core.interop.export import ExportOptions, PointExporter, export_paths
from inferx_core.interop.vllm_bench import vllm_bench_result
from inferx_core.load.records.request import RequestRecord
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.results.read import load_results
from inferx_core.testing import ServerProcess

MS = 1_000_000
#: vLLM's keys with --percentile-metrics ttft,tpot,itl,e2el (no --save-detailed).
SETUP = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts"]
# a random workload's flags, where vLLM's --metadata puts them (after num_prompts)
METADATA = ["random_input_len", "random_output_len", "random_range_ratio", "ignore_eos"]
TRAFFIC = ["request_rate", "burstiness", "max_concurrency"]
TOTALS = [
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
    "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
    "latencies", "queue_times", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
]  # fmt: skip
WINDOW = ["benchmark_start_time_unix", "benchmark_end_time_unix"]


def stat_keys(metric: str, percentiles: list[str]) -> list[str]:
    return [f"{s}_{metric}_ms" for s in ("mean", "median", "std", *percentiles)]


@pytest.fixture(scope="module")
def server():
    with ServerProcess(ttft_ms=20, itl_ms=4) as srv:
        yield srv


@pytest.fixture(scope="module")
def bench_dir(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(isl=24, osl=6),
        load=LoadProfile(concurrency=[2], num_prompts=8),
        slo=SLO(ttft_ms=1000, tpot_ms=1000),
        percentiles=[50.0, 99.0],
        output_dir=out,
    )
    exporter = PointExporter(ExportOptions(("vllm", "csv", "parquet"), out / "export"))
    run_bench(config, progress=False, on_point=exporter)
    assert not exporter.report.skipped
    return out


def test_bench_export_has_exactly_vllms_fields(bench_dir: Path) -> None:
    [path] = (bench_dir / "export").glob("*-c2.json")
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c))
    percentiles = ["p50", "p99"]
    expected = SETUP + METADATA + TRAFFIC + TOTALS
    for metric in ("ttft", "tpot", "itl", "e2el", "client_queue_time"):
        expected += stat_keys(metric, percentiles)
    assert list(data) == [*expected, *WINDOW, "inferx"]
    assert data["backend"] == data["endpoint_type"] == "openai"
    assert data["request_rate"] == "inf" and data["max_concurrency"] == 2
    assert data["burstiness"] == 1.0 and data["rtfx"] == 0.0
    assert len(data["date"]) == 15 and data["date"][8] == "-"  # %Y%m%d-%H%M%S
    assert data["completed"] == 8 and data["failed"] == 0
    assert isinstance(data["completed"], int) and isinstance(data["duration"], float)
    # seconds in the lists, milliseconds in the statistics
    assert data["mean_e2el_ms"] == pytest.approx(statistics.fmean(data["latencies"]) * 1000)
    assert 20 <= data["median_ttft_ms"] <= 40
    assert data["request_goodput"] == pytest.approx(data["request_throughput"])
    start, end = data["benchmark_start_time_unix"], data["benchmark_end_time_unix"]
    assert end - start == pytest.approx(data["duration"], abs=0.01)
    assert data["inferx"]["status"] == "ok"


def test_export_folder_is_skipped_by_result_readers(bench_dir: Path) -> None:
    loaded = load_results([bench_dir])
    assert len(loaded.results) == 1 and not loaded.skipped
    assert (bench_dir / "export" / "points.csv").is_file()


def test_export_refuses_to_overwrite_an_inferx_result(bench_dir: Path) -> None:
    from inferx_core.errors import UserFacingError

    with pytest.raises(UserFacingError, match="holds InferX results"):
        export_paths([bench_dir], ExportOptions(("vllm",), bench_dir))


def _record(
    i: int, send: int, chunks: list[int], *, usage: int | None = None, **kw
) -> RequestRecord:
    return RequestRecord(
        request_id=i, prompt_tokens=10, max_tokens=8, send_ns=send, chunk_ns=chunks,
        usage_output_tokens=usage, end_ns=(chunks[-1] if chunks else send) + MS, **kw,
    )  # fmt: skip


def _result_for(records: list[RequestRecord], bench_dir: Path, **identity):
    [result] = load_results([bench_dir]).results
    load = result.load.model_copy(update={"duration": 1.0, "slo": {}})
    ident = result.identity.model_copy(update=identity)
    # the hand-made replies end on their own before max_tokens: not asked to ignore EOS,
    # else each is a short reply, failed as the point counts it (metrics.requests)
    work = result.workload.model_copy(update={"ignore_eos": False})
    return result.model_copy(update={"load": load, "identity": ident, "workload": work})


def test_definitions_match_vllms_by_hand(bench_dir: Path) -> None:
    records = [
        _record(0, 0, [10 * MS, 14 * MS, 20 * MS], usage=3),
        _record(1, 5 * MS, [25 * MS, 27 * MS], usage=4, usage_prompt_tokens=11),
        _record(2, 6 * MS, [], error="HTTP 500", error_kind="http_status"),
    ]
    data = vllm_bench_result(_result_for(records, bench_dir), records)
    # TTFT 10 and 20 ms; E2E ends at the last content chunk: 20 and 22 ms
    assert data["mean_ttft_ms"] == pytest.approx(15.0)
    assert data["latencies"] == pytest.approx([0.020, 0.022, 0.0])
    # TPOT (latency - ttft) / (tokens - 1): 10/2 = 5 ms and 2/3 ms
    assert data["median_tpot_ms"] == pytest.approx((5.0 + 2 / 3) / 2)
    # ITL: chunk gaps 4, 6, 2 ms; population std
    assert data["mean_itl_ms"] == pytest.approx(4.0)
    assert data["std_itl_ms"] == pytest.approx(float(np.std([4, 6, 2])))
    assert data["completed"] == 2 and data["failed"] == 1
    # usage prompt_tokens wins over the workload's count, as in vLLM
    assert data["total_input_tokens"] == 10 + 11 and data["total_output_tokens"] == 7
    assert data["max_output_tokens_per_s"] == 5.0  # five content chunks in the first second
    # closed loop = vLLM's "rate inf, max concurrency": queue time since the first send
    assert data["queue_times"] == pytest.approx([0.0, 0.005, 0.006])


def test_empty_sample_is_zero_not_null(bench_dir: Path) -> None:
    records = [_record(0, 0, [], error="refused", error_kind="connection")]
    data = vllm_bench_result(_result_for(records, bench_dir), records)
    stats = {k: v for k, v in data.items() if k.endswith("_ms")}
    assert stats and all(v == 0.0 for v in stats.values())
    assert data["completed"] == 0 and data["max_concurrent_requests"] == 0


def test_open_loop_cap_adds_queue_statistics(bench_dir: Path) -> None:
    records = [
        _record(0, 3 * MS, [10 * MS, 12 * MS], usage=2, scheduled_ns=1 * MS),
        _record(1, 9 * MS, [20 * MS, 21 * MS], usage=2, scheduled_ns=5 * MS),
    ]
    result = _result_for(
        records, bench_dir, mode="open", concurrency=None, request_rate=4.0, max_concurrency=1
    )
    data = vllm_bench_result(result, records)
    assert data["request_rate"] == 4.0
    assert data["queue_times"] == pytest.approx([0.002, 0.004])
    assert data["mean_client_queue_time_ms"] == pytest.approx(3.0)
    # E2E including the client queue: (9 + 2) and (12 + 4) ms
    assert data["median_e2el_including_client_queue_ms"] == pytest.approx(13.5)


def test_detailed_adds_the_per_request_lists(bench_dir: Path) -> None:
    records = [_record(0, 0, [10 * MS, 14 * MS], usage=2)]
    data = vllm_bench_result(_result_for(records, bench_dir), records, detailed=True)
    assert data["ttfts"] == pytest.approx([0.010]) and data["itls"] == [pytest.approx([0.004])]
    assert data["input_lens"] == [10] and data["output_lens"] == [2] and data["errors"] == [""]
    # vLLM's key, one null per request: InferX keeps no text, and the notes say so
    assert data["generated_texts"] == [None]
    assert any("generated_texts: null" in n for n in data["inferx"]["notes"])
    detailed = ["input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
                "queue_times", "generated_texts", "errors"]  # fmt: skip
    assert [k for k in data if k in detailed] == detailed  # in vLLM's order


gaps = st.lists(st.integers(min_value=0, max_value=50 * MS), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100 * MS), gaps), min_size=1, max_size=8))
def test_statistics_are_numpys_over_the_records(bench_dir: Path, shapes) -> None:
    records = []
    for i, (send, steps) in enumerate(shapes):
        chunks = list(np.cumsum([send + 1, *steps]).tolist())
        records.append(_record(i, send, chunks, usage=len(chunks)))
    data = vllm_bench_result(_result_for(records, bench_dir), records)
    ttfts = [(r.chunk_ns[0] - r.send_ns) / 1e6 for r in records]
    gaps_ms = [(b - a) / 1e6 for r in records for a, b in itertools.pairwise(r.chunk_ns)]
    assert data["p99_ttft_ms"] == pytest.approx(float(np.percentile(ttfts, 99)))
    assert data["median_itl_ms"] == pytest.approx(float(np.median(gaps_ms or [0])))
    assert math.isfinite(data["std_e2el_ms"])


def _with_spec_window(window: dict | None):
    from result_factory import make_model

    from inferx_core.telemetry.model import CpuEnergy, GpuPower, TelemetrySection

    engine = {} if window is None else {"spec_decode": window}
    telemetry = TelemetrySection(
        gpu=GpuPower(power_valid=False, power_source="none"),
        cpu=CpuEnergy(cpu_energy_scope="package", cpu_energy_source="none"),
        engine_metrics=engine,
    )
    return make_model("spec").model_copy(update={"telemetry": telemetry})


def test_spec_decode_keys_only_when_the_window_had_draft_tokens_as_vllm_writes_them() -> None:
    """vLLM writes its spec_decode_* keys only when the draft tokens moved; an impossible
    figure is null, never vLLM's number."""
    from inferx_core.interop.vllm_bench import SPEC_DECODE_KEYS, spec_decode_fields

    assert spec_decode_fields(_with_spec_window(None)) == {}
    idle = {"source": "counters", "drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0}
    assert spec_decode_fields(_with_spec_window(idle)) == {}
    gauge = {"source": "accept_length_gauge", "mean_acceptance_length": 2.5}
    assert spec_decode_fields(_with_spec_window(gauge)) == {}  # vLLM reads counters only
    window = {"source": "counters", "acceptance_rate": None, "mean_acceptance_length": 2.4,
              "acceptance_per_position": [0.8, 0.6], "drafts": 99.6, "draft_tokens": 199.2,
              "accepted_tokens": 139.4}  # fmt: skip
    fields = spec_decode_fields(_with_spec_window(window))
    assert tuple(fields) == SPEC_DECODE_KEYS
    assert fields["spec_decode_acceptance_rate"] is None  # out of bounds in the window
    assert (fields["spec_decode_num_drafts"], fields["spec_decode_draft_tokens"]) == (100, 199)
    assert fields["spec_decode_per_position_acceptance_rates"] == [0.8, 0.6]


def test_a_ramped_point_carries_vllms_rps_change_events(bench_dir: Path) -> None:
    """vLLM's linear ramp from 1 to 4 req/s over 4 arrivals: rates 1, 2, 3, 4 at progress
    0, 1/3, 2/3, 1; an event for the start, then one per whole rate as it is reached,
    stamped with the arrival's scheduled wall-clock time (local ISO)."""
    import datetime as dt

    records = [
        _record(i, (i * 100 + 1) * MS, [(i * 100 + 5) * MS, (i * 100 + 6) * MS], usage=2,
                scheduled_ns=i * 100 * MS)
        for i in range(4)
    ]  # fmt: skip
    result = _result_for(records, bench_dir, mode="open", concurrency=None, request_rate=4.0)
    config = dict(result.provenance.config or {})
    config["load"] = {**(config.get("load") or {}), "ramp": "linear", "ramp_start_rps": 1}
    prov = result.provenance.model_copy(update={"config": config})
    result = result.model_copy(update={"provenance": prov})
    data = vllm_bench_result(result, records)
    events = data["rps_change_events"]
    assert [e["rps"] for e in events] == [1, 2, 3, 4]
    start = result.load.benchmark_start_time_unix
    # window start = first send (1 ms); arrival i is scheduled at i * 100 ms
    when = [dt.datetime.fromisoformat(e["timestamp"]).timestamp() - start for e in events]
    assert when == pytest.approx([-0.001, 0.099, 0.199, 0.299], abs=1e-5)
    keys = list(data)  # after vLLM's benchmark result, before its statistics
    assert keys.index("rtfx") < keys.index("rps_change_events") < keys.index("mean_ttft_ms")
    plain = _result_for(records, bench_dir, mode="open", concurrency=None, request_rate=4.0)
    unramped = vllm_bench_result(plain, records)
    assert "rps_change_events" not in unramped


def test_the_anatomy_goes_under_inferx_and_spec_keys_precede_the_statistics(
    bench_dir: Path,
) -> None:
    from inferx_core.metrics.anatomy import anatomy

    records = [_record(0, 0, [10 * MS, 14 * MS], usage=2)]
    records[0].server_figures = {"queue_ms": 1.0, "ttft_ms": 6.0, "decode_ms": 4.0}
    an = anatomy(records, "vllm")
    result = _result_for(records, bench_dir).model_copy(update={"anatomy": an})
    window = {"source": "counters", "acceptance_rate": 0.5, "mean_acceptance_length": 2.0,
              "acceptance_per_position": [0.5], "drafts": 10.0, "draft_tokens": 10.0,
              "accepted_tokens": 5.0}  # fmt: skip
    result = result.model_copy(update={"telemetry": _with_spec_window(window).telemetry})
    data = vllm_bench_result(result, records)
    assert data["inferx"]["anatomy"]["rest_ms"]["median"] == pytest.approx(3.0)
    keys = list(data)
    assert keys.index("spec_decode_per_position_acceptance_rates") < keys.index("mean_ttft_ms")
