"""``workload.reasoning`` reaches the chat request bodies the load sends.

``{thinking: false}`` is ``chat_template_kwargs: {enable_thinking: false}`` and
``{effort: low}`` is ``reasoning_effort: low`` in every chat request (single
prompts, warmup, multi-turn turns); a session's own extra body wins over the
knob; a completions workload with a reasoning knob is refused before any request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.sessions import turn_payload
from inferx_core.load.tokens.counter import resolve_token_counter
from inferx_core.pipeline.point.inputs import check_workload_files
from inferx_core.pipeline.point.requests import BenchTarget, build_requests, extra_body
from inferx_core.pipeline.point.session_requests import build_session_requests

TARGET = BenchTarget("http://127.0.0.1:9", "m")
LOAD = LoadProfile(concurrency=[1], num_prompts=3, warmup=2)
REASONING = {"thinking": False, "effort": "low"}


def counter():
    return resolve_token_counter(None, None, None)


def test_every_chat_request_carries_the_reasoning_knob() -> None:
    workload = Workload(api="chat", isl=16, osl=8, reasoning=REASONING)
    requests = build_requests(TARGET, LoadPoint(concurrency=1), workload, LOAD, counter())
    sent = [*requests.measured, *requests.warmup]
    assert len(sent) == 5
    for prepared in sent:
        body = json.loads(prepared.payload)
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
        assert body["reasoning_effort"] == "low"
        assert body["messages"] and body["max_tokens"] == prepared.record.max_tokens


def test_without_a_knob_the_body_is_unchanged() -> None:
    for api in ("chat", "completions"):
        workload = Workload(api=api, isl=16, osl=8)
        requests = build_requests(TARGET, LoadPoint(concurrency=1), workload, LOAD, counter())
        body = json.loads(requests.measured[0].payload)
        assert "chat_template_kwargs" not in body and "reasoning_effort" not in body


def test_every_turn_of_a_session_carries_it_and_its_own_body_wins() -> None:
    workload = Workload(
        api="chat", kind="multi-turn", turns=2, isl=16, osl=8, reasoning={"thinking": True}
    )
    requests = build_session_requests(TARGET, LoadPoint(concurrency=1), workload, LOAD, counter())
    for session in [*requests.measured, *requests.warmup]:
        for k in range(session.n_requests):
            body = json.loads(turn_payload(session, k, ["reply"] * k))
            assert body["chat_template_kwargs"] == {"enable_thinking": True}
    own = {"chat_template_kwargs": {"enable_thinking": False}, "x_test": {"natural_len": 3}}
    assert extra_body(workload, own) == own  # a request's own extra body wins
    assert extra_body(Workload(api="chat")) is None


def test_a_reasoning_knob_on_completions_is_refused_before_any_request(
    tmp_path: Path, capsys
) -> None:
    workload = Workload(api="completions", reasoning={"effort": "high"})
    with pytest.raises(UserFacingError, match=r"workload\.reasoning: .*set workload\.api: chat"):
        check_workload_files(workload)
    config = tmp_path / "bench.json"
    config.write_text(
        json.dumps(
            {
                "base_url": "http://127.0.0.1:9",
                "model": "m",
                "workload": {"reasoning": {"thinking": False}},
            }
        )
    )
    assert main(["bench", str(config), "--no-progress", "--output", str(tmp_path)]) != 0
    assert "workload.reasoning" in capsys.readouterr().err
