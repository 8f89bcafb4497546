"""The units the scheduler dispatches: a prepared request, or a multi-turn session."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass

from inferx_core.load.prompts.sessions import Session
from inferx_core.load.records.request import RequestRecord

__all__ = ["PreparedRequest", "Unit", "gather_or_cancel"]


@dataclass(slots=True)
class PreparedRequest:
    """A request ready to send: endpoint path, JSON body and its record."""

    path: str
    payload: bytes
    record: RequestRecord
    # Open loop: the arrival time in seconds after the load's origin (trace
    # replay, or a schedule computed once for several worker processes); when
    # the requests carry it, it replaces the arrival process's gaps.
    at_s: float | None = None


#: What the scheduler dispatches: a request, or a multi-turn session.
Unit = PreparedRequest | Session


async def gather_or_cancel(tasks: Collection[asyncio.Task[None]]) -> None:
    """Wait for the tasks of dispatched units; if the wait is cancelled, cancel them all."""
    try:
        if tasks:
            await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        raise
