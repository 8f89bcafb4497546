"""The event loop the load runs on: uvloop when it is installed, else asyncio's own.

uvloop (``pip install 'inferx-core[fast]'``) does the socket reads and the
loop's own bookkeeping in C (libuv): fewer CPU microseconds per network read,
which is what a streamed chunk costs when every chunk is its own read
(benchmarks/client_overhead.py has the figures). Everything InferX runs on the
loop is plain asyncio API, so both loops give the same records.

``INFERX_EVENT_LOOP=asyncio`` keeps asyncio's loop even with uvloop installed
(``uvloop`` insists on it and fails when it is missing; ``auto`` is the default).

uvloop's own clock and timers count whole milliseconds from a clock cached per
loop turn: ``loop.time()`` is truncated to the millisecond and a timer can
fire up to ~1 ms before its time, which would send open-loop arrivals early.
The loop used here (:func:`_precise_loop_class`) keeps asyncio's contract
instead: ``time()`` is ``time.monotonic()`` (the clock libuv reads too) and a
timer never fires early (its delay is rounded up to whole milliseconds of
libuv's clock, so it fires 0-1 ms late, like asyncio's on an idle machine).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Callable, Coroutine
from functools import cache
from math import ceil
from time import monotonic
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["ENV_VAR", "loop_factory", "loop_name", "run", "uvloop_module"]

ENV_VAR = "INFERX_EVENT_LOOP"
_CHOICES = ("auto", "asyncio", "uvloop")

T = TypeVar("T")


def uvloop_module() -> ModuleType | None:
    """The installed uvloop, or None (not installed, or it fails to import)."""
    try:
        return importlib.import_module("uvloop")
    except ImportError:
        return None


def _choice() -> str:
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in _CHOICES:
        raise ValueError(f"{ENV_VAR}={value!r}: expected one of {', '.join(_CHOICES)}")
    return value


def loop_factory(choice: str | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new loop: uvloop's (see above) when chosen and importable.

    ``choice``: ``auto``, ``asyncio`` or ``uvloop``; None reads ``INFERX_EVENT_LOOP``.
    """
    choice = choice or _choice()
    if choice not in _CHOICES:
        raise ValueError(f"event loop {choice!r}: expected one of {', '.join(_CHOICES)}")
    if choice == "asyncio":
        return asyncio.new_event_loop
    uvloop = uvloop_module()
    if uvloop is None:
        if choice == "uvloop":
            raise RuntimeError(
                f"{ENV_VAR}=uvloop but uvloop is not installed (pip install 'inferx-core[fast]')"
            )
        return asyncio.new_event_loop
    return _precise_loop_class(uvloop)


@cache
def _precise_loop_class(uvloop: ModuleType) -> type[asyncio.AbstractEventLoop]:
    """uvloop's loop with asyncio's clock and timer contract (see the module docstring)."""

    class PreciseLoop(uvloop.Loop):  # type: ignore[name-defined]  # uvloop is a module argument here
        def time(self) -> float:
            return monotonic()

        def call_later(
            self, delay: float, callback: Callable[..., object], *args: Any, context: Any = None
        ) -> asyncio.TimerHandle:
            return self.call_at(monotonic() + delay, callback, *args, context=context)

        def call_at(
            self, when: float, callback: Callable[..., object], *args: Any, context: Any = None
        ) -> asyncio.TimerHandle:
            # libuv fires a timer once its clock, whole milliseconds cached per
            # loop turn, reaches that clock + the delay in (rounded) milliseconds:
            # refresh the clock, then ask for the whole milliseconds from it to ``when``.
            cached = super().time()
            ms = ceil((when - cached) * 1000 - 1e-6)
            return super().call_later(max(ms, 0) / 1000, callback, *args, context=context)

    return PreciseLoop


def loop_name(factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> str:
    """``"uvloop"`` or ``"asyncio"``: the loop ``run`` uses now (or ``factory`` makes)."""
    factory = factory or loop_factory()
    return "asyncio" if factory is asyncio.new_event_loop else "uvloop"


def run(
    coro: Coroutine[Any, Any, T],
    *,
    factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
) -> T:
    """``asyncio.run(coro)`` on the chosen loop (see the module docstring).

    Same semantics as ``asyncio.run``: a fresh loop, closed afterwards; on
    Python 3.11+ a Ctrl-C cancels the main task first.
    """
    factory = factory or loop_factory()
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(coro)
    return _run_py310(coro, factory)  # pragma: no cover - Python 3.10 only


def _run_py310(
    coro: Coroutine[Any, Any, T], factory: Callable[[], asyncio.AbstractEventLoop]
) -> T:  # pragma: no cover - Python 3.10 only
    """asyncio.run's body (3.10 has no Runner and no loop_factory)."""
    loop = factory()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        try:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
