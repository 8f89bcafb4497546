"""The sessions of a multi-turn point (``workload.kind: multi-turn``).

``num_prompts`` (or its default) counts sessions; each sends ``turns``
requests, so the point's planned requests are sessions x turns. Warmup units
are one-turn sessions of the same message length (they warm the server
without holding a slot for a whole conversation). A duration-bound point
cycles the session pool with fresh ids. Every turn's body carries the
workload's reasoning knob (:func:`~inferx_core.pipeline.point.requests.extra_body`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.config.sessions import ThinkTimeConfig
from inferx_core.load.prompts.sessions import (
    ConversationPlan,
    ThinkTime,
    build_sessions,
    cycle_sessions,
)
from inferx_core.load.tokens.counter import CounterResolution
from inferx_core.pipeline.point.requests import (
    BenchTarget,
    Requests,
    extra_body,
    prompts_for,
    warmup_for,
)

__all__ = ["build_session_requests", "think_time"]


def think_time(value: float | ThinkTimeConfig) -> ThinkTime:
    """The config's think time as the load's distribution."""
    if not isinstance(value, ThinkTimeConfig):
        return ThinkTime("constant", mean=float(value))
    mean, median, sigma = value.mean or 0.0, value.median or 0.0, value.sigma or 0.0
    return ThinkTime(value.kind, mean=mean, median=median, sigma=sigma)


def build_session_requests(
    target: BenchTarget,
    point: LoadPoint,
    workload: Workload,
    load: LoadProfile,
    counter: CounterResolution,
) -> Requests:
    """Sessions of ``workload.turns`` turns for the point (see the module doc)."""
    n_sessions = prompts_for(point, load)
    n_warmup = warmup_for(point, load)
    plan = ConversationPlan(
        turns=workload.turns,
        turn_isl=workload.turn_isl or workload.isl,
        turn_osl=workload.turn_osl or workload.osl,
        think=think_time(workload.think_time_s),
        counter=counter.counter,
        api=workload.api,
        model=target.model,
        ignore_eos=workload.ignore_eos,
        continuous_usage=target.continuous_usage,
    )
    sessions, built = build_sessions(plan, n_sessions, seed=workload.seed)
    warmup: list[Any] = []
    if n_warmup:  # one-turn sessions, another seed, numbered below 0
        one_turn = dataclasses.replace(plan, turns=1)
        warm_seed = workload.seed + 7919
        warmup, _ = build_sessions(
            one_turn, n_warmup, seed=warm_seed, first_request_id=-n_warmup, warmup=True
        )
    for session in [*sessions, *warmup]:  # a session's own extra body wins
        session.extra_body = extra_body(workload, session.extra_body)
    endless = (load.duration_s or load.stages) and load.num_prompts is None
    measured = cycle_sessions(sessions) if endless else sessions
    return Requests(built, measured, warmup, n_sessions * workload.turns)
