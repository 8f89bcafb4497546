"""SIGINT, SIGTERM and SIGHUP end a run the same way: the running point kept, the engine stopped.

SIGTERM is what ``kill``, systemd, ``docker stop`` and SLURM time limits
send, SIGHUP what a closed terminal sends; both are treated as Ctrl-C. While
:func:`handle_interrupts` is active:

- the first signal says at once what happens next ("stopping engine, up to
  30 s; Ctrl-C again to kill now" while an engine runs), then interrupts: a
  load point in flight is cancelled the way ``asyncio.run`` cancels its main
  task (the point registers its task with :func:`cancel_on_interrupt`), so
  every finished request is kept and the point is written as interrupted;
  elsewhere a ``KeyboardInterrupt`` is raised;
- a second signal kills every engine group at once (SIGKILL, ``docker
  rm -f`` by InferX's label) and raises ``KeyboardInterrupt``.

A SIGHUP that was ignored when InferX started (``nohup``) stays ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class _State:
    active: int = 0
    received: list[int] = field(default_factory=list)
    #: seconds each running engine may take to stop (by id), for the first message
    engines: dict[int, float] = field(default_factory=dict)
    #: kill-now callbacks of running engines (by id), for the second signal
    killers: dict[int, Callable[[], None]] = field(default_factory=dict)
    task: tuple[asyncio.Task[Any], asyncio.AbstractEventLoop] | None = None


_state = _State()


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode())


def _first_message(signum: int) -> str:
    name = signal.Signals(signum).name
    if _state.engines:
        grace = max(_state.engines.values())
        return f"\n{name}: stopping engine, up to {grace:.0f} s; Ctrl-C again to kill now"
    return f"\n{name}: stopping; Ctrl-C again to stop at once"


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    _state.received.append(signum)
    if len(_state.received) == 1:
        _say(_first_message(signum))
        if _state.task is not None:
            task, loop = _state.task
            if not task.done():
                task.cancel()
                loop.call_soon_threadsafe(lambda: None)  # wake a select() with a long timeout
                return
        raise KeyboardInterrupt
    _say(f"{signal.Signals(signum).name} again: killing the engine now")
    kill_all_now()
    raise KeyboardInterrupt


def kill_all_now() -> None:
    """SIGKILL every registered engine at once (each killer is idempotent)."""
    for kill in list(_state.killers.values()):
        with contextlib.suppress(Exception):
            kill()


@contextlib.contextmanager
def handle_interrupts() -> Iterator[None]:
    """Install the handlers (main thread only; nested use is a no-op); restore them after."""
    if threading.current_thread() is not threading.main_thread() or _state.active:
        yield
        return
    previous = {}
    for sig in SIGNALS:
        current = signal.getsignal(sig)
        if sig == signal.SIGHUP and current == signal.SIG_IGN:
            continue  # nohup: the user asked to survive a closed terminal
        previous[sig] = current
        signal.signal(sig, _on_signal)
    _state.active += 1
    _state.received.clear()
    try:
        yield
    finally:
        _state.active -= 1
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def interrupted_by() -> str | None:
    """The first signal that interrupted the run (SIGINT is "Ctrl-C"), or None."""
    if not _state.received:
        return None
    first = _state.received[0]
    return "the user (Ctrl-C)" if first == signal.SIGINT else signal.Signals(first).name


def exit_code(default: int = 130) -> int:
    """128 + the first signal (130 for Ctrl-C, 143 for SIGTERM), as shells report it."""
    return 128 + _state.received[0] if _state.received else default


@contextlib.contextmanager
def engine_running(key: int, stop_grace_s: float, kill_now: Callable[[], None]) -> Iterator[None]:
    """While inside: the first signal names ``stop_grace_s``; the second calls ``kill_now``."""
    _state.engines[key] = stop_grace_s
    _state.killers[key] = kill_now
    try:
        yield
    finally:
        _state.engines.pop(key, None)
        _state.killers.pop(key, None)


@contextlib.contextmanager
def cancel_on_interrupt() -> Iterator[None]:
    """Inside a coroutine: the first signal cancels the current task (as asyncio.run does)."""
    task = asyncio.current_task()
    if task is None or not _state.active:
        yield
        return
    _state.task = (task, asyncio.get_running_loop())
    try:
        yield
    finally:
        _state.task = None


def was_interrupted() -> bool:
    return bool(_state.received)
