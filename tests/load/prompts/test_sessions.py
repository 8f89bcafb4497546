"""Multi-turn sessions: growing prompts with the real replies, think times, both loops."""

from __future__ import annotations

import asyncio
import itertools
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import inferx_core.load.schedule.scheduler as scheduler_module
from inferx_core.load.prompts.sessions import (
    TURN_SEPARATOR,
    ConversationPlan,
    Session,
    ThinkTime,
    Turn,
    build_sessions,
    conversation_messages,
    conversation_text,
    cycle_sessions,
)
from inferx_core.load.schedule.scheduler import LoadConfig, LoadScheduler, ScheduleResult
from inferx_core.load.tokens.tokenizer import LocalTokenizer
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.testing import ServerProcess

REPLY = "tok " * 4  # the scripted server's reply to max_tokens=4


def session(
    sid: int, turns: int = 3, *, api: str = "completions", think_s: float = 0.0, **x_test: Any
) -> Session:
    return Session(
        sid,
        [Turn(f"user {sid} turn {k}", 4, 4, think_s=think_s if k else 0.0) for k in range(turns)],
        api,  # type: ignore[arg-type]
        "test-model",
        first_request_id=sid * turns,
        extra_body={"x_test": x_test} if x_test else None,
    )


def run_sessions(
    base_url: str, units: list[Any], config: LoadConfig, sent: list[dict] | None = None, **kw: Any
) -> ScheduleResult:
    """Run the units; ``sent`` collects every request body the scheduler sent."""
    real = scheduler_module.send_streaming_request

    async def spy(pool: Any, path: str, payload: bytes, record: Any, **opts: Any) -> Any:
        if sent is not None:
            sent.append(json.loads(payload))
        return await real(pool, path, payload, record, **opts)

    async def go() -> ScheduleResult:
        async with ConnectionPool(base_url) as pool:
            return await LoadScheduler(pool, units, config, **kw).run()

    scheduler_module.send_streaming_request = spy  # type: ignore[assignment]
    try:
        return asyncio.run(go())
    finally:
        scheduler_module.send_streaming_request = real  # type: ignore[assignment]


def test_three_turns_send_the_conversation_so_far(server: ServerProcess) -> None:
    sent: list[dict] = []
    res = run_sessions(server.base_url, [session(0)], LoadConfig(max_concurrency=1), sent)
    prompts = [body["prompt"] for body in sent]
    assert prompts == [
        "user 0 turn 0",
        TURN_SEPARATOR.join(["user 0 turn 0", REPLY, "user 0 turn 1"]),
        TURN_SEPARATOR.join(["user 0 turn 0", REPLY, "user 0 turn 1", REPLY, "user 0 turn 2"]),
    ]
    assert [(r.session_id, r.turn, r.request_id) for r in res.records] == [(0, 0, 0), (0, 1, 1),
                                                                          (0, 2, 2)]  # fmt: skip
    assert all(r.ok for r in res.records)
    # user messages' tokens plus the replies' output tokens before the turn
    assert [r.prompt_tokens for r in res.records] == [4, 12, 20]
    assert all(r.reply_parts is None for r in res.records)  # the text is not kept on records
    assert "reply_parts" not in res.records[1].to_json()


def test_chat_turns_alternate_user_and_assistant(server: ServerProcess) -> None:
    sent: list[dict] = []
    run_sessions(server.base_url, [session(0, api="chat")], LoadConfig(max_concurrency=1), sent)
    last = sent[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == REPLY and last[3]["content"] == REPLY
    assert last[4]["content"] == "user 0 turn 2"


def test_think_time_is_waited_after_the_previous_reply(server: ServerProcess) -> None:
    res = run_sessions(server.base_url, [session(0, think_s=0.3)], LoadConfig(max_concurrency=1))
    first, second, third = res.records
    assert second.send_ns - first.end_ns >= 0.3e9
    assert third.send_ns - second.end_ns >= 0.3e9


def test_closed_loop_holds_sessions_not_requests(server: ServerProcess) -> None:
    """Concurrency 2 over 4 sessions: at most 2 sessions at a time, each turn after the last."""
    units = [session(s, ttft_ms=30) for s in range(4)]
    res = run_sessions(server.base_url, units, LoadConfig(max_concurrency=2))
    assert len(res.records) == 12 and all(r.ok for r in res.records)
    spans = {}
    for r in res.records:
        lo, hi = spans.get(r.session_id, (r.send_ns, r.end_ns))
        spans[r.session_id] = (min(lo, r.send_ns), max(hi, r.end_ns))
    edges = sorted([(lo, 1) for lo, _ in spans.values()] + [(hi, -1) for _, hi in spans.values()])
    live = peak = 0
    for _, d in edges:
        live += d
        peak = max(peak, live)
    assert peak == 2
    for s in range(4):
        turns = sorted((r for r in res.records if r.session_id == s), key=lambda r: r.turn)
        assert all(b.send_ns >= a.end_ns for a, b in itertools.pairwise(turns))
    assert all(r.scheduled_ns is None for r in res.records)


def test_open_loop_sessions_arrive_at_their_times(server: ServerProcess) -> None:
    units = [session(s, 2) for s in range(3)]
    for s, unit in enumerate(units):
        unit.at_s = 0.2 * s
    res = run_sessions(server.base_url, units, LoadConfig(request_rate=1.0))
    assert len(res.records) == 6
    starts = sorted(r.send_ns for r in res.records if r.turn == 0)
    assert min(b - a for a, b in itertools.pairwise(starts)) >= 0.15e9
    assert all(r.scheduled_ns is not None for r in res.records)


def test_trace_timestamps_of_later_turns_are_kept(server: ServerProcess) -> None:
    unit = session(0, 2)
    unit.at_s, unit.turns[1].at_s = 0.0, 0.4
    res = run_sessions(server.base_url, [unit], LoadConfig(request_rate=1.0))
    first, second = res.records
    assert second.send_ns - first.send_ns >= 0.35e9
    assert second.scheduled_ns is not None and second.send_ns >= second.scheduled_ns


def test_a_failed_turn_ends_its_session(server: ServerProcess) -> None:
    units = [session(0, fail="http_500")]
    res = run_sessions(server.base_url, units, LoadConfig(max_concurrency=1))
    assert len(res.records) == 1 and not res.records[0].ok


def test_duration_stops_later_turns(server: ServerProcess) -> None:
    res = run_sessions(
        server.base_url, [session(0, 5, think_s=0.3)], LoadConfig(max_concurrency=1, duration_s=0.5)
    )
    assert 1 <= len(res.records) < 5 and res.stopped_by_duration


def test_warmup_sessions_are_kept_apart(server: ServerProcess) -> None:
    res = run_sessions(
        server.base_url, [session(0, 2)], LoadConfig(max_concurrency=1), warmup=[session(9, 1)]
    )
    assert [r.warmup for r in res.warmup_records] == [True]
    assert len(res.records) == 2 and not any(r.warmup for r in res.records)


def test_sessions_pickle_and_cycle_with_fresh_ids() -> None:
    units = [session(0, 2), session(1, 3)]
    assert pickle.loads(pickle.dumps(units)) == units
    cycled = [u for u, _ in zip(cycle_sessions(units), range(4), strict=False)]
    assert [u.session_id for u in cycled] == [0, 1, 2, 3]
    assert [u.first_request_id for u in cycled] == [0, 2, 5, 7]


def test_built_sessions_have_exact_user_messages(hf_tok: Any) -> None:
    counter = LocalTokenizer(hf_tok, "test-bpe")
    think = ThinkTime("exponential", mean=1.0)
    plan = ConversationPlan(2, 24, 5, think, counter, api="chat", model="m")
    units, built = build_sessions(plan, 3, seed=1)
    assert [len(u.turns) for u in units] == [2, 2, 2]
    assert all(t.user_tokens == 24 and t.max_tokens == 5 for u in units for t in u.turns)
    lengths = [len(hf_tok.encode(t.user, add_special_tokens=False).ids) for u in units
               for t in u.turns]  # fmt: skip
    assert lengths == [24] * 6
    assert all(u.turns[0].think_s == 0 and u.turns[1].think_s > 0 for u in units)
    assert built.missed == 0 and len(built) == 6
    again, _ = build_sessions(plan, 3, seed=1)
    assert again == units  # seeded


@pytest.mark.parametrize(
    ("think", "check"),
    [
        (ThinkTime("constant", mean=2.0), lambda xs: set(xs) == {2.0}),
        (ThinkTime("exponential", mean=2.0), lambda xs: 1.7 < sum(xs) / len(xs) < 2.3),
        (ThinkTime("lognormal", median=1.0, sigma=0.5), lambda xs: 0.9 < sorted(xs)[1000] < 1.1),
    ],
)
def test_think_time_distributions(think: ThinkTime, check: Any) -> None:
    import numpy as np

    assert check(think.sample(2001, np.random.default_rng(0)))


words = st.text(alphabet="abc xyz", min_size=1, max_size=12)


@given(st.lists(words, min_size=1, max_size=6), st.data())
def test_turn_k_prompt_contains_every_earlier_turn_in_order(users: list[str], data: Any) -> None:
    replies = data.draw(st.lists(words, min_size=len(users) - 1, max_size=len(users) - 1))
    text = conversation_text(users, replies)
    pos = 0
    for i, user in enumerate(users):
        pos = text.index(user, pos) + len(user)
        if i < len(replies):
            pos = text.index(replies[i], pos) + len(replies[i])
    assert text.endswith(users[-1])
    messages = conversation_messages(users, replies)
    assert [m["content"] for m in messages if m["role"] == "user"] == users
    assert [m["content"] for m in messages if m["role"] == "assistant"] == replies
    # turn k's conversation is a prefix of turn k+1's (what a prefix cache can reuse)
    shorter = conversation_messages(users[:-1], replies[:-1]) if len(users) > 1 else []
    assert messages[: len(shorter)] == shorter
