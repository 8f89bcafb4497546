"""InferX's session trace: parsing, its errors, building and replaying sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from inferx_core.load.prompts.session_trace import (
    SessionTraceError,
    TurnSpec,
    build_trace_sessions,
    read_session_trace,
)
from inferx_core.load.schedule.scheduler import LoadConfig, LoadScheduler, ScheduleResult
from inferx_core.load.tokens.tokenizer import LocalTokenizer
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.testing import ServerProcess

EXAMPLE = Path(__file__).parents[3] / "examples" / "workloads" / "sessions.jsonl"


def write(tmp_path: Path, *sessions: Any) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join((s if isinstance(s, str) else json.dumps(s)) + "\n" for s in sessions))
    return path


def test_reads_turns_with_times_lengths_and_texts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"session_id": "b", "turns": [{"timestamp_s": 5, "input_tokens": 8, "output_tokens": 2}]},
        "",
        {"session_id": "a", "turns": [
            {"timestamp_s": 1.5, "input_tokens": 30, "output_tokens": 4},
            {"think_time_s": 2, "text": "and now?", "output_tokens": 3},
            {"timestamp_s": 9, "input_tokens": 5, "output_tokens": 1},
        ]},
    )  # fmt: skip
    first, second = read_session_trace(path)
    assert (first.session_id, first.start_s, second.session_id) == ("a", 1.5, "b")  # by arrival
    assert first.turns[1] == TurnSpec(output_tokens=3, text="and now?", think_time_s=2.0)
    assert first.turns[2].timestamp_s == 9.0


def test_untimed_sessions_keep_file_order_and_line_ids(tmp_path: Path) -> None:
    turn = {"input_tokens": 4, "output_tokens": 2}
    specs = read_session_trace(write(tmp_path, {"turns": [turn]}, {"turns": [turn, turn]}))
    assert [(s.session_id, s.start_s, len(s.turns)) for s in specs] == [("1", None, 1),
                                                                        ("2", None, 2)]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "invalid JSON"),
        ({"turns": []}, "non-empty list"),
        ({"turns": [{"output_tokens": 2}]}, "exactly one of input_tokens and text"),
        ({"turns": [{"input_tokens": 2, "text": "x", "output_tokens": 1}]}, "exactly one of"),
        ({"turns": [{"input_tokens": 2}]}, "output_tokens is required"),
        ({"turns": [{"input_tokens": 0, "output_tokens": 1}]}, "input_tokens must be an integer"),
        ({"turns": [{"input_tokens": 2, "output_tokens": 1, "think_time_s": 1}]}, "first turn"),
        ({"turns": [{"input_tokens": 2, "output_tokens": 1, "colour": 1}]}, "unknown field"),
        ({"turns": [{"input_tokens": 2, "output_tokens": 1}], "extra": 1}, "unknown field"),
        ({"turns": [{"input_tokens": 2, "output_tokens": 1},
                    {"timestamp_s": 3, "input_tokens": 2, "output_tokens": 1}]},
         "needs turns\\[0\\].timestamp_s"),
        ({"turns": [{"timestamp_s": 3, "input_tokens": 2, "output_tokens": 1},
                    {"timestamp_s": 1, "input_tokens": 2, "output_tokens": 1}]}, "not decrease"),
        ({"turns": [{"timestamp_s": -1, "input_tokens": 2, "output_tokens": 1}]}, ">= 0"),
    ],
)  # fmt: skip
def test_bad_lines_name_the_line_and_field(tmp_path: Path, line: Any, message: str) -> None:
    good = {"turns": [{"input_tokens": 2, "output_tokens": 1}]}
    with pytest.raises(SessionTraceError, match=f"trace.jsonl:2: .*{message}"):
        read_session_trace(write(tmp_path, good, line))


def test_timed_and_untimed_sessions_do_not_mix(tmp_path: Path) -> None:
    timed = {"turns": [{"timestamp_s": 0, "input_tokens": 2, "output_tokens": 1}]}
    untimed = {"turns": [{"input_tokens": 2, "output_tokens": 1}]}
    with pytest.raises(SessionTraceError, match="time every session's start or none"):
        read_session_trace(write(tmp_path, timed, untimed))


def test_example_trace_builds_exact_sessions(hf_tok: Any) -> None:
    specs = read_session_trace(EXAMPLE)
    counter = LocalTokenizer(hf_tok, "test-bpe")
    sessions, built = build_trace_sessions(specs, counter, 0, api="chat", model="m")
    assert len(sessions) == len(specs) and built.missed == 0
    for session, spec in zip(sessions, specs, strict=True):
        assert session.at_s == spec.start_s
        for turn, given in zip(session.turns, spec.turns, strict=True):
            if given.text is not None:
                assert turn.user == given.text
            else:
                assert turn.user_tokens == given.input_tokens
            assert turn.max_tokens == given.output_tokens
    ids = [s.first_request_id for s in sessions]
    assert ids == [sum(len(s.turns) for s in sessions[:i]) for i in range(len(sessions))]


def test_replay_sends_turns_at_their_times(
    server: ServerProcess, hf_tok: Any, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        {"turns": [{"timestamp_s": 0, "input_tokens": 6, "output_tokens": 2},
                   {"timestamp_s": 0.5, "input_tokens": 6, "output_tokens": 2}]},
        {"turns": [{"timestamp_s": 0.2, "text": "hello", "output_tokens": 2},
                   {"think_time_s": 0.3, "input_tokens": 6, "output_tokens": 2}]},
    )  # fmt: skip
    sessions, _ = build_trace_sessions(
        read_session_trace(path), LocalTokenizer(hf_tok, "t"), 0, api="completions",
        model="test-model",
    )  # fmt: skip

    async def go() -> ScheduleResult:
        async with ConnectionPool(server.base_url) as pool:
            return await LoadScheduler(pool, sessions, LoadConfig(request_rate=1.0)).run()

    res = asyncio.run(go())
    by = {(r.session_id, r.turn): r for r in res.records}
    assert len(by) == 4 and all(r.ok for r in res.records)
    t0 = by[0, 0].send_ns
    assert by[1, 0].send_ns - t0 >= 0.15e9
    assert by[0, 1].send_ns - t0 >= 0.45e9
    assert by[1, 1].send_ns - by[1, 0].end_ns >= 0.3e9
