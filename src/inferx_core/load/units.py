"""The units the scheduler dispatches: a prepared request, or a multi-turn session."""

from __future__ import annotations

from dataclasses import dataclass

from inferx_core.load.records import RequestRecord
from inferx_core.load.sessions import Session

__all__ = ["PreparedRequest", "Unit"]


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
