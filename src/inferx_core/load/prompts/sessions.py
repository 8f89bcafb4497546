"""Multi-turn sessions: a conversation of turns, one dispatch unit of the scheduler.

A :class:`Session` is plain data (it travels to worker processes by pickle):
the new user message of every turn (exact-length text, built once), its
output length, and when it is due: ``think_s`` after the previous reply
ended, or ``at_s`` seconds after the load's origin (a timestamped trace).
Turn ``k``'s prompt is the whole conversation so far, the user messages of
turns ``0..k`` and the model's actual replies to turns ``0..k-1`` (their
text, captured from the stream), then the new message:

* chat: a ``messages`` list, ``user`` and ``assistant`` alternating;
* completions: the pieces joined with :data:`TURN_SEPARATOR`.

The record of a turn counts ``prompt_tokens`` as the user messages' exact
lengths plus the previous replies' output tokens (the server's usage
``prompt_tokens`` also includes the chat template and separators).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from inferx_core.load.prompts.payloads import (
    CHAT_PATH,
    COMPLETIONS_PATH,
    build_chat_payload,
    build_completions_payload,
)
from inferx_core.load.prompts.prompt_set import PromptSet, PromptSpec, WorkloadSpec
from inferx_core.load.prompts.prompt_text import exact_random_texts, fitted_word_texts, stream_rng
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.tokens.tokenizer import TokenCounter, is_tokenizer

__all__ = [
    "TURN_SEPARATOR",
    "ConversationPlan",
    "Session",
    "ThinkTime",
    "Turn",
    "build_sessions",
    "conversation_messages",
    "conversation_text",
    "cycle_sessions",
    "exact_length_texts",
    "sessions_prompt_set",
    "turn_payload",
    "turn_record",
]

#: Between the pieces of a completions conversation (user, reply, user, ...).
TURN_SEPARATOR = "\n\n"

_STREAM_THINK = 11  # the think times' own random stream of the seed


@dataclass(frozen=True, slots=True)
class ThinkTime:
    """A think-time distribution in seconds: ``constant`` (``mean``), ``exponential``
    (``mean``) or ``lognormal`` (``median``, ``sigma``)."""

    kind: Literal["constant", "exponential", "lognormal"] = "constant"
    mean: float = 0.0
    median: float = 0.0
    sigma: float = 0.0

    def sample(self, n: int, rng: np.random.Generator) -> list[float]:
        if self.kind == "constant" or n == 0:
            return [float(self.mean)] * n
        if self.kind == "exponential":
            return (
                [float(x) for x in rng.exponential(self.mean, size=n)] if self.mean else [0.0] * n
            )
        return [float(x) for x in rng.lognormal(math.log(self.median), self.sigma, size=n)]


@dataclass(slots=True)
class Turn:
    """One user turn: its new message, output length and when it is due."""

    user: str
    user_tokens: int
    max_tokens: int
    think_s: float = 0.0  # after the previous reply ended (turn 0: unused)
    at_s: float | None = None  # due this long after the load's origin (trace timestamps)


@dataclass(slots=True)
class Session:
    """A conversation sent turn after turn (see the module doc)."""

    session_id: int
    turns: list[Turn]
    api: Literal["completions", "chat"]
    model: str
    ignore_eos: bool = True
    continuous_usage: bool = False
    first_request_id: int = 0  # turn k's record has request_id first_request_id + k
    at_s: float | None = None  # open loop: turn 0 arrives this long after the origin
    warmup: bool = False
    extra_body: dict[str, Any] | None = field(default=None)

    @property
    def n_requests(self) -> int:
        return len(self.turns)

    @property
    def path(self) -> str:
        return CHAT_PATH if self.api == "chat" else COMPLETIONS_PATH


def conversation_messages(users: Sequence[str], replies: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages of a turn: user, assistant, ..., user (``len(users) == len(replies) + 1``)."""
    messages: list[dict[str, str]] = []
    for i, user in enumerate(users):
        messages.append({"role": "user", "content": user})
        if i < len(replies):
            messages.append({"role": "assistant", "content": replies[i]})
    return messages


def conversation_text(users: Sequence[str], replies: Sequence[str]) -> str:
    """A completions prompt of a turn: user, reply, ..., user joined by TURN_SEPARATOR."""
    pieces: list[str] = []
    for i, user in enumerate(users):
        pieces.append(user)
        if i < len(replies):
            pieces.append(replies[i])
    return TURN_SEPARATOR.join(pieces)


def turn_payload(session: Session, k: int, replies: Sequence[str]) -> bytes:
    """The JSON body of turn ``k`` given the replies to turns ``0..k-1``."""
    users = [t.user for t in session.turns[: k + 1]]
    turn = session.turns[k]
    if session.api == "chat":
        return build_chat_payload(
            session.model,
            conversation_messages(users, replies[:k]),
            turn.max_tokens,
            ignore_eos=session.ignore_eos,
            continuous_usage=session.continuous_usage,
            extra_body=session.extra_body,
        )
    return build_completions_payload(
        session.model,
        conversation_text(users, replies[:k]),
        turn.max_tokens,
        ignore_eos=session.ignore_eos,
        continuous_usage=session.continuous_usage,
        extra_body=session.extra_body,
    )


def turn_record(session: Session, k: int, reply_tokens: int) -> RequestRecord:
    """Turn ``k``'s record; ``reply_tokens``: output tokens of the replies before it.

    The reply text is captured (``reply_parts``) except for the last turn, whose
    reply no later prompt needs.
    """
    turn = session.turns[k]
    user_tokens = sum(t.user_tokens for t in session.turns[: k + 1])
    return RequestRecord(
        request_id=session.first_request_id + k,
        prompt_tokens=user_tokens + reply_tokens,
        max_tokens=turn.max_tokens,
        warmup=session.warmup,
        session_id=session.session_id,
        turn=k,
        reply_parts=[] if k + 1 < len(session.turns) else None,
    )


def cycle_sessions(sessions: Sequence[Session]) -> Iterator[Session]:
    """Endless sessions for duration-bound runs: the pool again, with fresh ids."""
    if not sessions:
        return
    next_id = sessions[0].first_request_id
    for n, template in enumerate(itertools.cycle(sessions)):
        yield dataclasses.replace(
            template, session_id=n, first_request_id=next_id, turns=list(template.turns)
        )
        next_id += template.n_requests


def exact_length_texts(
    counter: TokenCounter, targets: Sequence[int], seed: int
) -> tuple[list[str], list[int], str | None]:
    """Random texts of exactly ``targets`` content tokens (no special tokens counted):
    token-exact with a tokenizer, else word text cut by the counter (with a note why)."""
    if is_tokenizer(counter):
        texts, values = exact_random_texts(
            counter, targets, seed, chat=True, unique_prefix=True, max_rounds=16
        )
        return texts, values, None
    texts, values = fitted_word_texts(counter, targets, seed, chat=True, unique_prefix=True)
    return (
        texts,
        values,
        "counter cannot decode token ids: user messages are word text cut to length",
    )


def sessions_prompt_set(
    texts: Sequence[str],
    values: Sequence[int],
    targets: Sequence[int],
    out_lens: Sequence[int],
    counter: TokenCounter,
    *,
    api: Literal["completions", "chat"],
    seed: int,
    notes: list[str],
    started: float,
) -> PromptSet:
    """The user messages as a built workload (what the result's workload section shows)."""
    estimated = counter.source == "estimate"
    prompts = [
        PromptSpec(
            prompt=t, prompt_tokens=v, target_prompt_tokens=g, max_tokens=o, estimated=estimated
        )
        for t, v, g, o in zip(texts, values, targets, out_lens, strict=True)
    ]
    misses = [abs(p.miss) for p in prompts if p.miss]
    isl = max(targets, default=1)
    osl = max(out_lens, default=1)
    return PromptSet(
        prompts=prompts,
        spec=WorkloadSpec(kind="random", isl=isl, osl=osl, semantics="fixed", api=api),
        seed=seed,
        token_source=counter.source,
        token_counter=counter.description,
        input_lengths={"semantics": "multi-turn", "per_turn": "user message tokens"},
        output_lengths={"semantics": "multi-turn", "per_turn": "max_tokens"},
        estimated=estimated,
        missed=len(misses),
        max_abs_miss=max(misses, default=0),
        mean_abs_miss=float(np.mean(misses)) if misses else 0.0,
        build_seconds=time.perf_counter() - started,
        notes=notes,
    )


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """What every session of a point shares: ``turns`` user messages of exactly
    ``turn_isl`` tokens (counted by ``counter``), ``turn_osl`` output tokens each,
    think times drawn from ``think``, and how the turns are sent (``api``, ``model``)."""

    turns: int
    turn_isl: int
    turn_osl: int
    think: ThinkTime
    counter: TokenCounter
    api: Literal["completions", "chat"]
    model: str
    ignore_eos: bool = True
    continuous_usage: bool = False


def build_sessions(
    plan: ConversationPlan,
    n_sessions: int,
    *,
    seed: int,
    first_request_id: int = 0,
    warmup: bool = False,
) -> tuple[list[Session], PromptSet]:
    """``n_sessions`` sessions of ``plan`` (think times seeded by ``seed``); their
    requests are numbered from ``first_request_id``."""
    started = time.perf_counter()
    turns = plan.turns
    n = n_sessions * turns
    targets = [plan.turn_isl] * n
    texts, values, note = exact_length_texts(plan.counter, targets, seed)
    thinks = plan.think.sample(n, stream_rng(seed, _STREAM_THINK))
    sessions = []
    for s in range(n_sessions):
        first = s * turns
        session_turns = [
            Turn(texts[i], values[i], plan.turn_osl, 0.0 if i == first else thinks[i])
            for i in range(first, first + turns)
        ]
        session = Session(
            s,
            session_turns,
            plan.api,
            plan.model,
            ignore_eos=plan.ignore_eos,
            continuous_usage=plan.continuous_usage,
            first_request_id=first_request_id + first,
            warmup=warmup,
        )
        sessions.append(session)
    notes = [
        f"multi-turn: {n_sessions} sessions x {turns} turns; turn k's prompt is the conversation "
        f"so far (user messages and the model's replies) plus a new {plan.turn_isl}-token message"
    ]
    if note:
        notes.append(note)
    built = sessions_prompt_set(
        texts,
        values,
        targets,
        [plan.turn_osl] * n,
        plan.counter,
        api=plan.api,
        seed=seed,
        notes=notes,
        started=started,
    )
    return sessions, built
