"""A signal always ends a point, whatever instant of the point it lands on.

The signal is delivered at the racy instant itself (a hook raises it as the
scheduler returns), not after a sleep meant to fit a window.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator

import pytest

from inferx_core.launch import interrupts
from inferx_core.launch.interrupts import handle_interrupts
from inferx_core.load.prompts.payloads import COMPLETIONS_PATH, build_completions_payload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import LoadConfig, LoadScheduler, PreparedRequest
from inferx_core.pipeline.point import drive as drive_module
from inferx_core.pipeline.point.drive import DrivePlan, drive
from inferx_core.pipeline.point.requests import BenchTarget, Requests
from inferx_core.telemetry.recorder import TelemetryRecorder
from inferx_core.testing import ServerProcess


@pytest.fixture
def clean_signals() -> Iterator[None]:
    """SIGHUP as a terminal has it (under ``nohup`` it comes in ignored, and
    handle_interrupts rightly leaves it so); the signals received are not left for the
    next test to read."""
    hangup = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGHUP, hangup)
    interrupts._state.received.clear()


def _request(i: int) -> PreparedRequest:
    payload = build_completions_payload("test-model", "hello world", 4)
    return PreparedRequest(COMPLETIONS_PATH, payload, RequestRecord(i, 2, 4))


def _requests(n: int) -> Requests:
    return Requests(None, [_request(i) for i in range(n)], [], n)  # type: ignore[arg-type]


def _plan(
    server: ServerProcess, n: int, abort_check: Callable[[], str | None] | None = None
) -> DrivePlan:
    """A point of ``n`` requests, two at a time, against the scripted server."""
    target = BenchTarget(server.base_url, "test-model")
    config = LoadConfig(max_concurrency=2)
    recorder = TelemetryRecorder([])
    return DrivePlan(
        target, _requests(n), config, recorder, progress=False, abort_check=abort_check
    )


class _BrokenWatchdog:
    """A point's abort check that raises, as a broken engine watchdog would."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> str | None:
        self.calls += 1
        raise RuntimeError("the engine watchdog broke")

    async def ended(self) -> None:
        """Until the watchdog has raised and its task has ended with the error."""
        while not self.calls:  # the watchdog polls every ABORT_POLL_S
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=str)
def test_a_signal_as_the_scheduler_returns_still_interrupts_the_point(
    sig: int, monkeypatch: pytest.MonkeyPatch, clean_signals: None
) -> None:
    real_run = LoadScheduler.run

    async def run_then_signal(self: LoadScheduler, **kw):  # type: ignore[no-untyped-def]
        result = await real_run(self, **kw)
        # the point's task is still registered and not done: the handler cancels it
        # while it runs, so the cancellation arrives at the point's next wait
        signal.raise_signal(sig)
        return result

    monkeypatch.setattr(drive_module.LoadScheduler, "run", run_then_signal)
    with ServerProcess() as server, handle_interrupts():
        out = drive(_plan(server, 6))
    # before: the wait for the watchdog task swallowed the cancellation and the run
    # went on to its next point as if no signal had come
    assert out.interrupted
    assert interrupts.was_interrupted()
    assert [r.ok for r in out.result.records] == [True] * 6  # every finished record kept


def test_a_signal_after_a_helper_failed_still_writes_the_point_interrupted(
    monkeypatch: pytest.MonkeyPatch, clean_signals: None
) -> None:
    """The point's watchdog failed (its abort check raised) and then a signal came: the
    signal is what ends the point. Before, the helper's error replaced the cancellation
    in drive's cleanup and the interrupted point crashed with the helper's traceback."""
    watchdog = _BrokenWatchdog()
    real_run = LoadScheduler.run

    async def run_then_signal(self: LoadScheduler, **kw):  # type: ignore[no-untyped-def]
        result = await real_run(self, **kw)
        await watchdog.ended()
        signal.raise_signal(signal.SIGTERM)
        await asyncio.sleep(5)  # the load still running: the cancellation lands here
        return result

    monkeypatch.setattr(drive_module.LoadScheduler, "run", run_then_signal)
    with ServerProcess() as server, handle_interrupts():
        out = drive(_plan(server, 4, abort_check=watchdog))
    assert out.interrupted and interrupts.was_interrupted()
    assert [r.ok for r in out.result.records] == [True] * 4


def test_a_helper_failure_without_a_signal_is_still_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not hidden either: a watchdog that breaks during a point that ends by itself fails it."""
    watchdog = _BrokenWatchdog()
    real_run = LoadScheduler.run

    async def run_until_it_broke(self: LoadScheduler, **kw):  # type: ignore[no-untyped-def]
        result = await real_run(self, **kw)
        await watchdog.ended()
        return result

    monkeypatch.setattr(drive_module.LoadScheduler, "run", run_until_it_broke)
    with ServerProcess() as server, pytest.raises(RuntimeError, match="watchdog broke"):
        drive(_plan(server, 2, abort_check=watchdog))
