"""Trace files: Mooncake JSONL and Azure CSV parsing (good and bad lines), window and speedup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.config.models import Workload
from inferx_core.config.trace_checks import parse_trace_window
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.traces import (
    TraceError,
    TraceRequest,
    parse_datetime_ns,
    read_trace,
    select_requests,
    trace_rate,
)


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_mooncake_lines_are_read_in_time_order(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "t.jsonl",
        [
            {"timestamp": 1500, "input_length": 700, "output_length": 8, "hash_ids": [0, 1]},
            "",
            {"timestamp": 0, "input_length": 512, "output_length": 4, "hash_ids": [0]},
            {"timestamp": 20.5, "input_length": 9, "output_length": 1},
        ],
    )
    reqs = read_trace(path, "mooncake")
    assert [r.time_ns for r in reqs] == [0, 20_500_000, 1_500_000_000]
    assert [r.input_tokens for r in reqs] == [512, 9, 700]
    assert [r.output_tokens for r in reqs] == [4, 1, 8]
    assert [r.hash_ids for r in reqs] == [(0,), None, (0, 1)]
    assert [r.line for r in reqs] == [3, 4, 1]  # blank line 2 skipped, numbers kept


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"input_length": 5, "output_length": 1}, "timestamp"),
        ({"timestamp": -1, "input_length": 5, "output_length": 1}, "timestamp"),
        ({"timestamp": "0", "input_length": 5, "output_length": 1}, "timestamp"),
        ({"timestamp": 0, "input_length": 0, "output_length": 1}, "input_length"),
        ({"timestamp": 0, "input_length": 2.5, "output_length": 1}, "input_length"),
        ({"timestamp": 0, "input_length": True, "output_length": 1}, "input_length"),
        ({"timestamp": 0, "input_length": 5}, "output_length"),
        ({"timestamp": 0, "input_length": 5, "output_length": "x"}, "output_length"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, -2]}, "hash_ids"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": "1,2"}, "hash_ids"),
    ],
)
def test_a_bad_mooncake_field_names_file_line_and_field(
    tmp_path: Path, line: dict, field: str
) -> None:
    good = {"timestamp": 0, "input_length": 5, "output_length": 1}
    path = _jsonl(tmp_path / "bad.jsonl", [good, line])
    with pytest.raises(TraceError, match=rf"bad\.jsonl:2: field '{field}'") as info:
        read_trace(path, "mooncake")
    assert isinstance(info.value, UserFacingError)  # exit 2, no traceback


@pytest.mark.parametrize(
    ("text", "match"),
    [("{not json", r"t\.jsonl:1: invalid JSON"), ("[1, 2]", r"t\.jsonl:1: expected a JSON object")],
)
def test_a_mooncake_line_that_is_no_object_is_refused(
    tmp_path: Path, text: str, match: str
) -> None:
    with pytest.raises(TraceError, match=match):
        read_trace(_jsonl(tmp_path / "t.jsonl", [text]), "mooncake")


def test_missing_and_empty_trace_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "nope.jsonl", "mooncake")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(TraceError, match="holds no request"):
        read_trace(tmp_path / "empty.jsonl", "mooncake")


AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:46.0000001,1, 7
"""


def test_azure_csv_times_count_from_the_first_request(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    path.write_text(AZURE)
    reqs = read_trace(path, "azure")
    assert [r.input_tokens for r in reqs] == [1, 374, 396]
    assert [r.output_tokens for r in reqs] == [7, 44, 109]
    chosen = select_requests(reqs)
    assert [r.at_s for r in chosen] == pytest.approx([0.0, 0.6805899, 4.9951689], abs=1e-9)
    assert [r.line for r in reqs] == [4, 2, 3]


def test_azure_extra_columns_any_order_and_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text(
        "\ufeffGeneratedTokens,Model,TIMESTAMP,ContextTokens\n"
        "5,m,2024-05-10 00:00:00,100\n6,m,2024-05-10T00:00:01.5,200\n",
        encoding="utf-8",
    )
    reqs = select_requests(read_trace(path, "azure"))
    assert [(r.input_tokens, r.output_tokens, r.at_s) for r in reqs] == [
        (100, 5, 0.0),
        (200, 6, 1.5),
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("TIMESTAMP,ContextTokens\n", r"a\.csv:1: the header lacks column\(s\) GeneratedTokens"),
        ("", r"a\.csv: empty file"),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,5\n",
            r"a\.csv:2: field 'TIMESTAMP': 'yesterday' is not a datetime",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,5\n",
            r"a\.csv:2: field 'ContextTokens': must be an integer >= 1",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,4,many\n",
            r"a\.csv:2: field 'GeneratedTokens': 'many' is not a number",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,4\n",
            r"a\.csv:2: 2 cells, the header has 3",
        ),
    ],
)
def test_bad_azure_files_name_file_line_and_field(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "a.csv"
    path.write_text(text)
    with pytest.raises(TraceError, match=match):
        read_trace(path, "azure")


def test_datetimes_keep_nanoseconds_and_offsets() -> None:
    base = parse_datetime_ns("2023-11-16 18:15:46")
    assert parse_datetime_ns("2023-11-16 18:15:46.6805900") - base == 680_590_000
    assert parse_datetime_ns("2023-11-16 18:15:46.000000001") - base == 1
    assert parse_datetime_ns("2023-11-16T19:15:46+01:00") == base
    assert parse_datetime_ns("2023-11-16 18:15:46Z") == base
    assert base == 1_700_158_546 * 10**9  # naive times are read as UTC


def test_windows_parse_from_text() -> None:
    assert parse_trace_window("60:120") == (60.0, 120.0)
    assert parse_trace_window("60:") == (60.0, None)
    assert parse_trace_window(":30") == (0.0, 30.0)
    with pytest.raises(ValueError, match="START:END"):
        parse_trace_window("60")
    with pytest.raises(ValueError, match="must be numbers"):
        parse_trace_window("a:b")


def test_the_config_checks_a_trace_workload() -> None:
    w = Workload(trace=Path("t.jsonl"), trace_format="mooncake", trace_window="5:10")
    assert w.kind == "trace" and w.trace_window == (5.0, 10.0)
    for bad, match in [
        ({"kind": "trace"}, "needs 'trace: path/to/file'"),
        ({"trace": "t.jsonl"}, "trace_format"),
        ({"trace": "t.jsonl", "kind": "random"}, "read only with kind 'trace'"),
        ({"trace": "t", "trace_format": "azure", "trace_window": "9:3"}, "must be after"),
        ({"trace": "t", "trace_format": "azure", "trace_speedup": 0}, "greater than 0"),
        ({"trace": "t", "trace_format": "azure", "shared_prefix": 8}, "a trace sets the prompts"),
    ]:
        with pytest.raises(ValueError, match=match):
            Workload(**bad)


def _reqs(times_ms: list[int]) -> list[TraceRequest]:
    return [TraceRequest(t * 1_000_000, 10, 2, line=i + 1) for i, t in enumerate(times_ms)]


@settings(max_examples=60, deadline=None)
@given(
    times=st.lists(st.integers(0, 100_000), min_size=1, max_size=40),
    speedup=st.floats(0.1, 50),
    start=st.integers(0, 60),
    length=st.one_of(st.none(), st.integers(1, 60)),
    limit=st.one_of(st.none(), st.integers(1, 40)),
)
def test_window_and_speedup_map_trace_time_to_arrivals(
    times: list[int], speedup: float, start: int, length: int | None, limit: int | None
) -> None:
    end = None if length is None else start + length
    reqs = _reqs(times)
    chosen = select_requests(reqs, speedup=speedup, window=(start, end), limit=limit)
    t0 = min(times)
    inside = sorted(
        t - t0 for t in times if t - t0 >= start * 1000 and (end is None or t - t0 < end * 1000)
    )
    if limit is not None:
        inside = inside[:limit]
    assert len(chosen) == len(inside)
    for req, offset_ms in zip(chosen, inside, strict=True):
        assert req.time_ns - t0 * 1_000_000 == offset_ms * 1_000_000
        assert req.at_s == pytest.approx((offset_ms / 1000 - start) / speedup, abs=1e-9)
    ats = [r.at_s for r in chosen]
    assert ats == sorted(ats) and all(a >= 0 for a in ats)  # type: ignore[operator]


def test_speedup_must_be_positive_and_rates_follow_the_replay() -> None:
    with pytest.raises(ValueError, match="speedup"):
        select_requests(_reqs([0]), speedup=0)
    chosen = select_requests(_reqs([0, 500, 1000]), speedup=2)
    assert [r.at_s for r in chosen] == [0.0, 0.25, 0.5]
    assert trace_rate(chosen) == pytest.approx(4.0)
    assert trace_rate(chosen[:1]) is None


def test_session_trace_times_and_think_times_follow_window_and_speedup() -> None:
    from inferx_core.load.prompts.session_trace import SessionSpec, TurnSpec
    from inferx_core.load.prompts.traces import select_sessions

    def spec(start: float) -> SessionSpec:
        turns = (TurnSpec(4, 8, timestamp_s=start), TurnSpec(4, 8, think_time_s=3.0),
                 TurnSpec(4, 8, timestamp_s=start + 10))  # fmt: skip
        return SessionSpec(str(start), turns)

    chosen = select_sessions([spec(6.5), spec(5.0), spec(5.2), spec(9.0)], speedup=2,
                             window=(0.2, 4.0), limit=2)  # fmt: skip
    assert [s.session_id for s in chosen] == ["5.2", "6.5"]  # 5.0 is before, 9.0 after the cut
    assert [[t.timestamp_s for t in s.turns] for s in chosen] == [
        pytest.approx([0.0, None, 5.0]),
        pytest.approx([0.65, None, 5.65]),
    ]
    assert {s.turns[1].think_time_s for s in chosen} == {1.5}


EXAMPLES = Path(__file__).parents[3] / "examples" / "workloads"


def test_the_example_traces_and_config_are_valid() -> None:
    from inferx_core.config.loader import load_config
    from inferx_core.config.models import BenchConfig

    mooncake = read_trace(EXAMPLES / "mooncake-small.jsonl", "mooncake")
    assert len(mooncake) == 16
    assert all(len(r.hash_ids or ()) == -(-r.input_tokens // 512) for r in mooncake)
    assert all(r.hash_ids[:2] == (0, 1) for r in mooncake)  # type: ignore[index]
    azure = read_trace(EXAMPLES / "azure-small.csv", "azure")
    assert len(azure) == 16 and all(r.hash_ids is None for r in azure)
    config = load_config(EXAMPLES / "trace.yaml")
    assert isinstance(config, BenchConfig) and config.workload.kind == "trace"
    assert config.workload.trace_window == (0.0, 4.0)
