"""The event-loop chooser (uvloop when importable, else asyncio) and the client on each loop."""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Iterator

import pytest

from inferx_core.load.schedule.scheduler import LoadConfig, run_load
from inferx_core.load.transport import event_loop
from inferx_core.load.transport.chunks import BACKENDS
from inferx_core.load.transport.client import ConnectionPool
from inferx_core.load.transport.sse import use_json_backend
from inferx_core.testing import ServerProcess

HAVE_UVLOOP = event_loop.uvloop_module() is not None


@pytest.fixture
def fake_uvloop(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[asyncio.AbstractEventLoop]]:
    """A stand-in uvloop module whose loops (asyncio's) are recorded when made."""
    made: list[asyncio.AbstractEventLoop] = []

    class Loop(asyncio.SelectorEventLoop):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

        def call_later(self, delay, callback, *args, context=None):  # type: ignore[no-untyped-def]
            # uvloop's call_later schedules itself (asyncio's goes through call_at)
            return asyncio.SelectorEventLoop.call_at(
                self, self.time() + delay, callback, *args, context=context
            )

    module = types.ModuleType("uvloop")
    module.Loop = Loop  # type: ignore[attr-defined]
    module.new_event_loop = Loop  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "uvloop", module)
    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    yield made


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_uvloop_is_used_when_it_imports(fake_uvloop: list[asyncio.AbstractEventLoop]) -> None:
    assert event_loop.loop_name() == "uvloop"
    loop = event_loop.run(_running_loop())
    assert fake_uvloop == [loop] and isinstance(loop, sys.modules["uvloop"].Loop)
    assert loop.is_closed()


def test_asyncio_is_used_when_uvloop_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import raises, as if not installed
    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    assert event_loop.uvloop_module() is None
    assert event_loop.loop_factory() is asyncio.new_event_loop
    assert event_loop.loop_name() == "asyncio"
    loop = event_loop.run(_running_loop())
    assert isinstance(loop, asyncio.BaseEventLoop) and loop.is_closed()


def test_the_environment_can_keep_asyncio_or_insist_on_uvloop(
    fake_uvloop: list[asyncio.AbstractEventLoop], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(event_loop.ENV_VAR, "asyncio")
    assert event_loop.loop_name() == "asyncio"
    event_loop.run(_running_loop())
    assert fake_uvloop == []
    monkeypatch.setenv(event_loop.ENV_VAR, "uvloop")
    assert event_loop.loop_name() == "uvloop"
    monkeypatch.setitem(sys.modules, "uvloop", None)
    with pytest.raises(RuntimeError, match="not installed"):
        event_loop.loop_factory()
    monkeypatch.setenv(event_loop.ENV_VAR, "trio")
    with pytest.raises(ValueError, match="expected one of"):
        event_loop.loop_factory()


def test_run_behaves_like_asyncio_run(fake_uvloop: list[asyncio.AbstractEventLoop]) -> None:
    async def boom() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        event_loop.run(boom())

    left: list[asyncio.Future[None]] = []

    async def leaves_a_task() -> int:
        left.append(asyncio.ensure_future(asyncio.sleep(30)))  # cancelled when the run ends
        return 7

    assert event_loop.run(leaves_a_task()) == 7
    assert left[0].cancelled()
    assert all(loop.is_closed() for loop in fake_uvloop)


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_the_real_uvloop_is_the_default_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvloop

    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)
    assert event_loop.loop_name() == "uvloop"
    assert isinstance(event_loop.run(_running_loop()), uvloop.Loop)


LOOPS = ["asyncio", "uvloop"] if HAVE_UVLOOP else ["asyncio"]


@pytest.mark.parametrize("loop_name", LOOPS)
@pytest.mark.parametrize("decoder", list(BACKENDS))
def test_streamed_requests_against_the_scripted_server_on_each_loop(
    server: ServerProcess, make_request, loop_name: str, decoder: str
) -> None:
    factory = asyncio.new_event_loop
    if loop_name == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    reqs = [make_request(i, 24, chat=i % 2 == 1) for i in range(16)]
    reqs.append(make_request(16, 24, fail="error_mid"))

    async def go() -> None:
        async with ConnectionPool(server.base_url) as pool:
            await run_load(pool, reqs, LoadConfig(max_concurrency=8, timeout_s=60))

    previous = use_json_backend(decoder)
    try:
        event_loop.run(go(), factory=factory)
    finally:
        use_json_backend(previous)
    recs = [r.record for r in reqs]
    for rec in recs[:16]:
        assert rec.error is None, rec.error
        assert len(rec.chunk_ns) == 24 and rec.usage_output_tokens == 24
        assert rec.finish_reason == "length"
        assert rec.send_ns < rec.chunk_ns[0] <= rec.chunk_ns[-1] <= rec.end_ns
    assert recs[16].error_kind == "stream_error" and "scripted" in (recs[16].error or "")


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_uvloop_keeps_asyncio_s_clock_and_never_fires_a_timer_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # uvloop's own clock is whole milliseconds, and its timers can fire ~1 ms early,
    # which would send open-loop arrivals before their time.
    import random
    import time

    monkeypatch.delenv(event_loop.ENV_VAR, raising=False)

    async def early_ms() -> list[float]:
        loop = asyncio.get_running_loop()
        assert abs(loop.time() - time.monotonic()) < 0.001
        out = []
        for i in range(150):
            if i % 5 == 0:
                time.sleep(0.002)  # a long loop turn: libuv's cached clock goes stale
            delay = random.uniform(0.0001, 0.004)
            start = time.monotonic()
            if i % 2:
                await asyncio.sleep(delay)
            else:
                fut = loop.create_future()
                loop.call_at(start + delay, fut.set_result, None)
                await fut
            out.append(start + delay - time.monotonic())
        return out

    early = event_loop.run(early_ms())
    assert max(early) <= 0, f"a timer fired {max(early) * 1e3:.3f} ms early"
