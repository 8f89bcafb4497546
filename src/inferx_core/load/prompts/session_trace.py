"""InferX's session trace: agentic sessions of turns, one session per JSONL line.

::

    {"session_id": "fix-bug-17", "turns": [
      {"timestamp_s": 0.0, "input_tokens": 1800, "output_tokens": 120},
      {"think_time_s": 4.0, "text": "Now run the tests.", "output_tokens": 300},
      {"timestamp_s": 30.0, "input_tokens": 64, "output_tokens": 80}]}

A turn's new user message is ``input_tokens`` tokens of random text (exact
length, like every InferX prompt) or the given ``text``; ``output_tokens``
is its output length (``max_tokens``). When it is sent: ``timestamp_s``
(seconds from the trace's start), or ``think_time_s`` after the previous
turn's reply ended (neither: at once). A turn with a timestamp is never sent
before the reply it follows. Turn 0 has no think time: its timestamp is the
session's arrival; a trace either times every session's start or none
(then the load's closed or open loop dispatches the sessions). The exact
rules are in ``docs/workloads.md``; a bad line raises
:class:`SessionTraceError` naming the file, the line and the field.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inferx_core.config.parsing import ParseError, loads_data_json
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.dataset import DatasetError, check_regular_file
from inferx_core.load.prompts.prompt_set import PromptSet
from inferx_core.load.prompts.prompt_text import content_values
from inferx_core.load.prompts.sessions import Session, Turn, exact_length_texts, sessions_prompt_set
from inferx_core.load.tokens.tokenizer import TokenCounter

__all__ = [
    "SessionSpec",
    "SessionTraceError",
    "TurnSpec",
    "build_trace_sessions",
    "read_session_trace",
]

_TURN_KEYS = frozenset({"input_tokens", "text", "output_tokens", "timestamp_s", "think_time_s"})
_SESSION_KEYS = frozenset({"session_id", "turns"})


class SessionTraceError(UserFacingError):
    """A session trace that cannot be read: file, line and what is wrong."""


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """One turn of a trace session, as the file gives it."""

    output_tokens: int
    input_tokens: int | None = None
    text: str | None = None
    timestamp_s: float | None = None
    think_time_s: float | None = None


@dataclass(frozen=True, slots=True)
class SessionSpec:
    """One trace session: its id (the file's, else the line number) and its turns."""

    session_id: str
    turns: tuple[TurnSpec, ...]

    @property
    def start_s(self) -> float | None:
        """The session's arrival (turn 0's timestamp), None when the trace has no times."""
        return self.turns[0].timestamp_s


def _number(obj: dict[str, Any], key: str, *, integer: bool, minimum: float) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or value < minimum:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{key} must be {kind} >= {minimum:g}, got {value!r}")
    return value


def _turn(obj: Any, k: int) -> TurnSpec:
    if not isinstance(obj, dict):
        raise ValueError(f"turns[{k}] must be an object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _TURN_KEYS)
    if unknown:
        raise ValueError(
            f"turns[{k}] has unknown field(s) {unknown}; allowed: {sorted(_TURN_KEYS)}"
        )
    where = f"turns[{k}]."
    try:
        tokens = _number(obj, "input_tokens", integer=True, minimum=1)
        output = _number(obj, "output_tokens", integer=True, minimum=1)
        stamp = _number(obj, "timestamp_s", integer=False, minimum=0)
        think = _number(obj, "think_time_s", integer=False, minimum=0)
    except ValueError as exc:
        raise ValueError(where + str(exc)) from None
    text = obj.get("text")
    if (tokens is None) == (text is None):
        raise ValueError(f"turns[{k}]: give exactly one of input_tokens and text")
    if text is not None and not (isinstance(text, str) and text):
        raise ValueError(f"{where}text must be a non-empty string")
    if output is None:
        raise ValueError(f"{where}output_tokens is required")
    if stamp is not None and think is not None:
        raise ValueError(f"turns[{k}]: give timestamp_s or think_time_s, not both")
    if k == 0 and think is not None:
        raise ValueError("turns[0].think_time_s: the first turn follows no reply (use timestamp_s)")
    return TurnSpec(
        output,
        tokens,
        text,
        None if stamp is None else float(stamp),
        None if think is None else float(think),
    )


def _session(obj: Any, lineno: int) -> SessionSpec:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _SESSION_KEYS)
    if unknown:
        raise ValueError(f"unknown field(s) {unknown}; allowed: {sorted(_SESSION_KEYS)}")
    turns = obj.get("turns")
    if not isinstance(turns, list) or not turns:
        raise ValueError("turns must be a non-empty list of turns")
    specs = tuple(_turn(t, k) for k, t in enumerate(turns))
    stamps = [t.timestamp_s for t in specs if t.timestamp_s is not None]
    if stamps and specs[0].timestamp_s is None:
        raise ValueError("a session with timestamps needs turns[0].timestamp_s (its arrival)")
    if stamps != sorted(stamps):
        raise ValueError("timestamp_s must not decrease from turn to turn")
    sid = obj.get("session_id", lineno)
    if not isinstance(sid, str | int) or isinstance(sid, bool):
        raise ValueError(f"session_id must be a string or an integer, got {sid!r}")
    return SessionSpec(str(sid), specs)


def read_session_trace(path: str | Path) -> list[SessionSpec]:
    """Every session of an InferX session trace (blank lines skipped): in file order, or
    by arrival when the sessions are timed."""
    p = Path(path)
    try:
        check_regular_file(p)  # a FIFO would block the read below forever
    except DatasetError as exc:
        raise SessionTraceError(str(exc)) from None
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionTraceError(f"cannot read session trace {p}: {exc}") from exc
    sessions: list[SessionSpec] = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            sessions.append(_session(loads_data_json(line), lineno))
        except ParseError as exc:
            raise SessionTraceError(f"{p}:{lineno}: {exc.reason}") from None
        except ValueError as exc:
            raise SessionTraceError(f"{p}:{lineno}: {exc}") from None
    if not sessions:
        raise SessionTraceError(f"{p}: no session (one JSON object per line)")
    timed = {s.start_s is not None for s in sessions}
    if len(timed) > 1:
        raise SessionTraceError(
            f"{p}: some sessions have turns[0].timestamp_s and some do not; "
            "time every session's start or none"
        )
    if timed == {True}:  # the open loop sends them in order of arrival
        sessions.sort(key=lambda s: s.start_s or 0.0)
    return sessions


def build_trace_sessions(
    specs: Sequence[SessionSpec],
    counter: TokenCounter,
    seed: int,
    *,
    api: Literal["completions", "chat"],
    model: str,
    ignore_eos: bool = True,
    continuous_usage: bool = False,
    first_request_id: int = 0,
) -> tuple[list[Session], PromptSet]:
    """Runnable sessions of a trace: random user messages of exactly ``input_tokens``
    tokens (seeded), given texts counted; times as the specs give them."""
    started = time.perf_counter()
    turns = [t for s in specs for t in s.turns]
    texts, values, note = _turn_texts(turns, counter, seed)
    sessions, pos, next_id = [], 0, first_request_id
    for n, spec in enumerate(specs):
        session_turns = []
        for k, t in enumerate(spec.turns):
            at_s = t.timestamp_s if k else None
            session_turns.append(
                Turn(texts[pos], values[pos], t.output_tokens, t.think_time_s or 0.0, at_s)
            )
            pos += 1
        sessions.append(
            Session(
                n,
                session_turns,
                api,
                model,
                ignore_eos,
                continuous_usage,
                next_id,
                at_s=spec.start_s,
            )
        )
        next_id += len(session_turns)
    targets = [
        t.input_tokens if t.input_tokens is not None else v
        for t, v in zip(turns, values, strict=True)
    ]
    notes = [f"session trace: {len(specs)} sessions, {len(turns)} turns"] + ([note] if note else [])
    built = sessions_prompt_set(
        texts,
        values,
        targets,
        [t.output_tokens for t in turns],
        counter,
        api=api,
        seed=seed,
        notes=notes,
        started=started,
    )
    return sessions, built


def _turn_texts(
    turns: Sequence[TurnSpec], counter: TokenCounter, seed: int
) -> tuple[list[str], list[int], str | None]:
    """Every turn's user message and its content tokens: random text of exactly
    ``input_tokens``, or the given ``text`` as the counter counts it."""
    texts, values = [""] * len(turns), [0] * len(turns)
    random_at = [i for i, t in enumerate(turns) if t.text is None]
    made, made_values, note = exact_length_texts(
        counter, [turns[i].input_tokens or 1 for i in random_at], seed
    )
    for i, text, value in zip(random_at, made, made_values, strict=True):
        texts[i], values[i] = text, int(value)
    given_at = [i for i, t in enumerate(turns) if t.text is not None]
    given = [turns[i].text or "" for i in given_at]
    for i, text, value in zip(given_at, given, content_values(counter, given, True), strict=True):
        texts[i], values[i] = text, int(value)
    return texts, values, note
