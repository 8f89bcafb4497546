"""The Python API beside the CLI (issue 19): arun_bench inside a running event loop,
a per-request callback, on_point, and plain progress lines where there is no terminal."""

from __future__ import annotations

import asyncio
import io
import threading

import pytest

from inferx_core.api import BenchConfig, LoadProfile, Workload, arun_bench, run_bench
from inferx_core.errors import UserFacingError
from inferx_core.load.schedule import progress as progress_module
from inferx_core.load.schedule.progress import LoadProgress
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def server():
    with ServerProcess(ttft_ms=5, itl_ms=1) as running:
        yield running


def _config(server: ServerProcess, *concurrency: int) -> BenchConfig:
    return BenchConfig(
        base_url=server.base_url,
        workload=Workload(isl=32, osl=8),
        load=LoadProfile(concurrency=list(concurrency), num_prompts=6, warmup=2),
        output_dir=None,
    )


def test_run_bench_calls_on_request_per_measured_request_and_on_point(server) -> None:
    records, points = [], []
    outcomes = run_bench(
        _config(server, 1, 2), on_request=records.append, on_point=points.append, progress=False
    )
    assert [o.point_id for o in points] == [o.point_id for o in outcomes]
    assert len(outcomes) == 2
    assert len(records) == 12 and all(not r.warmup for r in records)  # warmup not reported
    assert sum(o.result.load.completed for o in outcomes) == sum(r.ok for r in records)


def test_arun_bench_inside_a_running_loop_calls_back_on_that_loop(server) -> None:
    async def notebook_cell():
        loop_thread = threading.get_ident()
        seen_threads, records, ticks = set(), [], []

        def on_request(record):
            seen_threads.add(threading.get_ident())
            records.append(record)

        async def still_responsive():
            for _ in range(3):
                ticks.append(1)
                await asyncio.sleep(0.01)

        ticker = asyncio.ensure_future(still_responsive())
        outcomes = await arun_bench(_config(server, 2), on_request=on_request, progress=False)
        await ticker
        return loop_thread, seen_threads, records, ticks, outcomes

    loop_thread, seen, records, ticks, outcomes = asyncio.run(notebook_cell())
    assert outcomes[0].result.status == "ok"
    assert len(records) == 6 and seen == {loop_thread}
    assert len(ticks) == 3


def test_run_bench_inside_a_running_loop_says_use_arun_bench(server) -> None:
    async def inside():
        run_bench(_config(server, 1))

    with pytest.raises(UserFacingError, match="await arun_bench"):
        asyncio.run(inside())


def test_a_raising_on_request_is_warned_about_and_the_point_still_runs(server) -> None:
    def broken(record):
        raise ValueError("nope")

    with pytest.warns(RuntimeWarning, match="on_request callback raised ValueError"):
        (outcome,) = run_bench(_config(server, 1), on_request=broken, progress=False)
    assert outcome.result.load.completed == 6


class _Record:
    warmup, ok, output_tokens = False, True, 8


def test_progress_without_a_terminal_prints_periodic_plain_lines(monkeypatch) -> None:
    stream = io.StringIO()  # not a tty
    clock = iter(range(0, 1000, 4))
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: float(next(clock)))
    with LoadProgress("c=4", 10, enabled=True, stream=stream) as bar:
        for _ in range(5):
            bar.on_complete(_Record())  # type: ignore[arg-type]
            bar.refresh()
    lines = stream.getvalue().splitlines()
    assert lines and all(line.startswith("c=4: ") for line in lines)
    assert "5/10 ok, 0 failed" in lines[-1] and "tok/s" in lines[-1]
    assert 2 <= len(lines) <= 4  # every PLAIN_INTERVAL_S (10 s) and at the end, not per refresh
    assert "" not in lines


def test_progress_default_is_silent_without_a_terminal() -> None:
    stream = io.StringIO()
    with LoadProgress("c=1", 3, stream=stream) as bar:
        bar.refresh()
    assert stream.getvalue() == ""


def test_sse_server_help_says_what_it_prints_when_ready() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "inferx_core.testing.sse_server", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    text = " ".join(done.stdout.split())
    assert "SSE_SERVER_READY <base_url>" in text and "x_test" in text
    assert "--fail-after FAIL_AFTER content chunks sent before a mid-stream failure" in text
