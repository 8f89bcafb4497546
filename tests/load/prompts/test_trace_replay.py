"""Trace replay end to end (`inferx bench --trace`) and over-long prompts skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.app import main
from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.config.points import LoadPoint, load_points, point_id_for
from inferx_core.load.tokens.counter import CounterAttempt, CounterResolution, EstimateCounter
from inferx_core.load.tokens.tokenizer import LocalTokenizer
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.pipeline.point.requests import BenchTarget, build_requests
from inferx_core.results.model import parse_result
from inferx_core.testing import ServerProcess


@pytest.fixture
def tokenizer_file(hf_tok: Any, tmp_path: Path) -> Path:
    path = tmp_path / "tokenizer.json"
    hf_tok.save(str(path))
    return path


def _mooncake(path: Path, rows: list[tuple[int, int, int, list[int]]]) -> Path:
    lines = [
        json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": h})
        for t, i, o, h in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


TRACE = [(100 * k, 520 + 7 * k, 3, [0, 1] if k % 2 else [0, 2]) for k in range(10)]


def test_bench_replays_a_mooncake_trace_at_its_times(
    server: ServerProcess, tokenizer_file: Path, tmp_path: Path, capsys: Any
) -> None:
    trace = _mooncake(tmp_path / "small.jsonl", TRACE)
    out = tmp_path / "out"
    code = main(
        ["bench", "--base-url", server.base_url, "--trace", str(trace), "--trace-format",
         "mooncake", "--trace-speedup", "2", "--tokenizer", str(tokenizer_file),
         "--output", str(out), "--json", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    [raw] = json.loads(capsys.readouterr().out)
    result = parse_result(raw)
    assert result.point_id == "test-model-completions-trace-small-x2-replay"
    assert result.identity.mode == "open" and result.identity.concurrency is None
    assert result.load is not None and result.load.arrival == "trace"
    assert result.load.completed == 10 and result.load.warmup_requests == 0
    assert result.workload is not None
    assert result.workload.spec["trace_format"] == "mooncake"
    assert result.workload.missed_target == 0
    lines = (out / f"{result.point_id}.requests.jsonl").read_text().splitlines()
    records = sorted((json.loads(line) for line in lines), key=lambda r: r["request_id"])
    assert [r["prompt_tokens"] for r in records] == [i for _, i, _, _ in TRACE]
    due = [(r["scheduled_ns"] - records[0]["scheduled_ns"]) / 1e9 for r in records]
    assert due == pytest.approx([t / 1000 / 2 for t, *_ in TRACE], abs=0.02)  # 50 ms apart
    # never early, but for uvloop's millisecond timers (a wake-up up to ~1 ms before its time)
    assert all(r["send_ns"] >= r["scheduled_ns"] - 3_000_000 for r in records)
    sent = [(r["send_ns"] - records[0]["send_ns"]) / 1e9 for r in records]
    assert sent == pytest.approx(due, abs=0.15)  # generous: the machine is shared
    late = result.latency.dispatch_lateness_ms  # type: ignore[union-attr]
    assert late is not None and late.requests == 10
    assert 0 <= late.p50 <= late.p99 <= late.max
    assert result.metric("p99_dispatch_lateness_ms") == late.p99


def test_prepared_requests_carry_the_trace_arrivals(hf_tok: Any, tmp_path: Path) -> None:
    trace = _mooncake(tmp_path / "t.jsonl", TRACE)
    workload = Workload(trace=trace, trace_format="mooncake", trace_speedup=4, trace_window="0.2:")
    load = LoadProfile(num_prompts=5, warmup=2)
    [point] = load_points(load, workload)
    assert point == LoadPoint(trace=True) and point.key == "replay"
    assert point_id_for("m", workload, point) == "m-completions-trace-t-x4-replay"
    counter = CounterResolution(LocalTokenizer(hf_tok), (CounterAttempt("local", True, "x"),))
    reqs = build_requests(BenchTarget("http://h:1", "m"), point, workload, load, counter)
    assert [r.at_s for r in reqs.measured] == pytest.approx([0, 0.025, 0.05, 0.075, 0.1])
    assert [r.record.prompt_tokens for r in reqs.measured] == [534, 541, 548, 555, 562]
    assert reqs.trace_rate == pytest.approx(40.0)
    assert [r.at_s for r in reqs.warmup] == [None, None]  # warmup is a closed loop first
    assert [r.record.prompt_tokens for r in reqs.warmup] == [534, 541]


def test_a_trace_and_a_request_rate_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"remove load\.request_rate"):
        BenchConfig(
            base_url="http://h:1",
            workload=Workload(trace=tmp_path / "t.jsonl", trace_format="azure"),
            load=LoadProfile(request_rate=[5]),
        )


def test_a_bad_trace_line_fails_before_any_request(
    server: ServerProcess, tmp_path: Path, capsys: Any
) -> None:
    trace = tmp_path / "bad.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1}\n')
    code = main(["bench", "--base-url", server.base_url, "--trace", str(trace),
                 "--trace-format", "mooncake", "--output", str(tmp_path / "o"),
                 "--no-progress"])  # fmt: skip
    assert code == 2
    assert "bad.jsonl:2: field 'input_length'" in capsys.readouterr().err


def _dataset(path: Path) -> Path:
    rows = [{"prompt": " ".join(["w"] * n), "output_len": 10} for n in (10, 50, 100)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_dataset_prompts_over_the_context_are_skipped_and_counted(
    server: ServerProcess, tmp_path: Path
) -> None:
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(dataset=_dataset(tmp_path / "d.jsonl"), max_model_len=70),
        load=LoadProfile(concurrency=[2], num_prompts=6, warmup=0),
        output_dir=None,
        telemetry=False,
    )
    [outcome] = run_bench(config, progress=False)
    result = outcome.result
    assert result.workload is not None and result.load is not None
    # records cycle 10, 50, 100, 10, ...: the 100-word ones (+10 out > 70) are skipped
    assert result.workload.context == {
        "max_model_len": 70,
        "source": "workload.max_model_len",
        "skipped_over_context": 2,
        "considered": 8,
        "rule": "skipped when prompt_tokens + max_tokens > max_model_len",
    }
    assert result.load.completed == 6 and result.workload.num_prompts == 6
    assert any("skipped 2 of 8 prompts over the context" in n for n in result.workload.notes)


def test_the_servers_context_is_used_and_all_over_is_an_error(tmp_path: Path, capsys: Any) -> None:
    data = _dataset(tmp_path / "d.jsonl")
    with ServerProcess(max_model_len=70) as small:
        config = BenchConfig(
            base_url=small.base_url,
            workload=Workload(dataset=data),
            load=LoadProfile(concurrency=[1], num_prompts=3, warmup=0),
            output_dir=None,
            telemetry=False,
        )
        [outcome] = run_bench(config, progress=False)
        context = outcome.result.workload.context  # type: ignore[union-attr]
        assert context["source"] == f"{small.base_url}/v1/models"
        assert context["skipped_over_context"] >= 1
        code = main(["bench", "--base-url", small.base_url, "--dataset", str(data),
                     "--max-model-len", "12", "--num-prompts", "3", "--output",
                     str(tmp_path / "o"), "--no-progress"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "all 3 prompts have prompt tokens + max_tokens above max_model_len 12" in err


def test_trace_requests_over_the_context_are_dropped_keeping_the_others_times(
    hf_tok: Any, tmp_path: Path
) -> None:
    rows = [(0, 100, 4, [0]), (10, 5000, 4, [1]), (20, 200, 4, [2])]
    workload = Workload(
        trace=_mooncake(tmp_path / "t.jsonl", rows), trace_format="mooncake", max_model_len=4096
    )
    counter = CounterResolution(LocalTokenizer(hf_tok), ())
    reqs = build_requests(
        BenchTarget("http://h:1", "m"), LoadPoint(trace=True), workload, LoadProfile(), counter
    )
    assert [r.at_s for r in reqs.measured] == [0.0, 0.02]
    assert reqs.context is not None and reqs.context["skipped_over_context"] == 1
    assert any("skipped 1 requests over the context" in n for n in reqs.built.notes)


def test_an_inferx_session_trace_replays_its_sessions_at_their_starts(
    server: ServerProcess, tmp_path: Path
) -> None:
    trace = tmp_path / "sessions.jsonl"
    rows = [
        {"turns": [{"timestamp_s": 10.0 + 0.2 * k, "input_tokens": 12, "output_tokens": 3},
                   {"think_time_s": 0.1, "input_tokens": 5, "output_tokens": 2}]}
        for k in range(4)
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = BenchConfig(
        base_url=server.base_url,
        workload=Workload(trace=trace, trace_format="inferx", trace_speedup=2, trace_window="0.2:"),
        load=LoadProfile(),
        output_dir=None,
        telemetry=False,
    )
    [outcome] = run_bench(config, progress=False)
    assert outcome.result.load is not None and outcome.result.load.completed == 6
    first = sorted((r for r in outcome.records if r.turn == 0), key=lambda r: r.send_ns)
    assert len(first) == 3  # the session at 10.0 s is before the window
    t0 = first[0].send_ns
    assert all(r.send_ns >= r.scheduled_ns - 3_000_000 for r in first)  # type: ignore[operator]
    assert [(r.send_ns - t0) / 1e9 for r in first] == pytest.approx([0, 0.1, 0.2], abs=0.08)
    late = outcome.result.latency.dispatch_lateness_ms  # type: ignore[union-attr]
    assert late is not None and late.requests >= 3


def test_an_untimed_session_trace_runs_at_the_loads_level(
    server: ServerProcess, tmp_path: Path
) -> None:
    trace = tmp_path / "s.jsonl"
    rows = [
        {
            "turns": [
                {"input_tokens": 4, "output_tokens": 2},
                {"think_time_s": 0.2, "input_tokens": 3, "output_tokens": 2},
            ]
        }
    ] * 5
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))  # fmt: skip
    workload = Workload(trace=trace, trace_format="inferx", trace_speedup=4)
    load = LoadProfile(concurrency=[2], num_prompts=3)
    assert load_points(load, workload) == [LoadPoint(concurrency=2)]
    config = BenchConfig(base_url=server.base_url, workload=workload, load=load,
                         output_dir=None, telemetry=False)  # fmt: skip
    [outcome] = run_bench(config, progress=False)
    assert outcome.point_id == "test-model-completions-trace-s-x4-c2"
    assert outcome.result.load.completed == 6  # type: ignore[union-attr]  # 3 sessions x 2
    with pytest.raises(ValueError, match="times no session"):
        BenchConfig(base_url="http://h:1", workload={"trace": trace, "trace_format": "inferx",
                                                    "trace_window": "0:5"})  # fmt: skip
    with pytest.raises(ValueError, match="no session has turns"):
        counter = CounterResolution(EstimateCounter(), ())
        build_requests(
            BenchTarget("http://h:1", "m"), LoadPoint(trace=True), workload, LoadProfile(), counter
        )


def test_a_capped_replay_waits_for_a_slot_and_counts_the_wait_as_lateness(
    tokenizer_file: Path, tmp_path: Path
) -> None:
    trace = _mooncake(tmp_path / "burst.jsonl", [(0, 40, 4, [k]) for k in range(6)])  # at once
    with ServerProcess(ttft_ms=30) as slow:
        config = BenchConfig(
            base_url=slow.base_url,
            workload=Workload(trace=trace, trace_format="mooncake", tokenizer=tokenizer_file),
            load=LoadProfile(max_concurrency=2),
            output_dir=None,
            telemetry=False,
        )
        [outcome] = run_bench(config, progress=False)
    assert outcome.point_id == "test-model-completions-trace-burst-replay-cap2"
    result = outcome.result
    assert result.identity.max_concurrency == 2 and result.load.completed == 6  # type: ignore[union-attr]
    late = result.latency.dispatch_lateness_ms  # type: ignore[union-attr]
    assert late is not None and late.max >= 50  # the last pair waited for two rounds of 30 ms
