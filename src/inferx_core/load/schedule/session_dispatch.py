"""How the scheduler runs a multi-turn session (a mixin of LoadScheduler).

A session is one unit: its turns go one after the other, turn ``k`` when turn
``k-1``'s reply ended plus its think time, or at its trace timestamp (seconds
after the load's origin; never before the reply it needs). Turn ``k``'s prompt
carries the replies so far, captured from their streams. A failed turn ends its
session (the next prompt would need its reply); so does the end of the load
(``duration_s``, the last stage, ``stop()``): a turn due after it is not sent.
"""

from __future__ import annotations

import asyncio
from time import perf_counter_ns
from typing import Any

from inferx_core.load.prompts.sessions import Session, turn_payload, turn_record
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.units import PreparedRequest

__all__ = ["SessionDispatch"]


class SessionDispatch:
    """Session turns on top of LoadScheduler's ``_send``, ``_sleep``, clock and deadline."""

    _deadline_ns: int | None
    _origin_loop: float
    _stopping: bool
    result: Any
    _send: Any
    _sleep: Any

    async def _run_session(
        self, session: Session, out: list[RequestRecord], measured: bool, due_ns: int | None
    ) -> None:
        """Turn k goes when turn k-1 ended plus its think time (or at its timestamp), with
        the replies so far in its prompt; a failed turn ends the session (its reply is
        unknown), and so does the load's end."""
        replies: list[str] = []
        reply_tokens = 0
        open_loop = due_ns is not None
        for k, turn in enumerate(session.turns):
            if k:
                due_ns, on_time = await self._await_turn(turn.at_s, turn.think_s, measured)
                if not on_time:
                    return
            rec = turn_record(session, k, reply_tokens)
            rec.scheduled_ns = due_ns if open_loop else None
            await self._send(
                PreparedRequest(session.path, turn_payload(session, k, replies), rec), out, measured
            )
            if not rec.ok:
                return
            replies.append("".join(rec.reply_parts or ()))
            rec.reply_parts = None  # the text lives on in the conversation only
            reply_tokens += rec.output_tokens

    async def _await_turn(
        self, at_s: float | None, think_s: float, measured: bool
    ) -> tuple[int, bool]:
        """Wait until a later turn is due: (when it was due, whether the load still runs)."""
        loop = asyncio.get_running_loop()
        delay = think_s if at_s is None else self._origin_loop + at_s - loop.time()
        due_ns = perf_counter_ns() + int(delay * 1e9)
        if measured and self._deadline_ns is not None:
            left = (self._deadline_ns - perf_counter_ns()) / 1e9
            if delay >= left:  # due after the end: it will not be sent
                await self._sleep(left)
                if not self._stopping:
                    self.result.stopped_by_duration = True
                return due_ns, False
        await self._sleep(delay)
        return due_ns, not self._stopping
