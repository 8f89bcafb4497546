"""The Python API to benchmark a running server: ``run_bench`` and ``arun_bench``.

``run_bench`` blocks; it runs its own event loop per load point, so it
cannot be called from code that already runs one (Jupyter, an async
pipeline). ``arun_bench`` is the same benchmark for those: awaitable, it
runs ``run_bench`` on a worker thread (with its own loop) and calls the
callbacks on the caller's event loop thread.

Callbacks:

- ``on_point(outcome: PointOutcome)``: after each load point, once its
  result is written (``outcome.result`` is the typed ``OkResult`` /
  ``InterruptedResult`` / ``FailedResult``, ``outcome.path`` its file or
  None). With ``load.repeats > 1``, once per repeat and once for the
  combined point.
- ``on_request(record: RequestRecord)``: after each measured request (not
  the warmup), with its timings (``ttft_s``, ``itl_s``, ``output_tokens``,
  ``ok``, ``error``, ...). It runs on the benchmark's own loop in
  ``run_bench``: keep it cheap (append, count), or the client measures
  itself. A callback that raises is warned about and not called again for
  that point; the benchmark goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from inferx_core.load.schedule.progress import RequestListener, request_listener
from inferx_core.pipeline.bench.points import bench_points

if TYPE_CHECKING:
    from inferx_core.config.models import BenchConfig
    from inferx_core.pipeline.point.measure import PointOutcome


def run_bench(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    on_request: RequestListener | None = None,
    progress: bool | None = None,
) -> list[PointOutcome]:
    """Benchmark every load point of ``config`` against its running server.

    Returns one ``PointOutcome`` per point (``.result`` typed, ``.records``
    the requests, ``.path`` the JSON written to ``config.output_dir``, if
    set). ``progress``: None shows a live bar on a terminal only; True also
    prints a plain line every 10 s where stderr is not a terminal; False
    never. Cannot be called from a running event loop: use ``arun_bench``.
    """
    _refuse_running_loop()
    with request_listener(on_request):
        return bench_points(config, on_point=on_point, progress=progress)


def _refuse_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    from inferx_core.errors import UserFacingError

    raise UserFacingError(
        "run_bench() cannot run inside a running event loop (Jupyter, async code): "
        "use `await arun_bench(config)`"
    )


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[Any], None] | None) -> Any:
    """``callback`` run on ``loop``'s thread (the caller's), not the benchmark's worker."""
    if callback is None:
        return None
    return lambda item: loop.call_soon_threadsafe(callback, item)


async def arun_bench(
    config: BenchConfig,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    on_request: RequestListener | None = None,
    progress: bool | None = None,
) -> list[PointOutcome]:
    """``run_bench`` for code inside an event loop: ``outcomes = await arun_bench(config)``.

    The benchmark runs on a worker thread with its own event loop, so the
    caller's loop stays responsive; ``on_point`` and ``on_request`` are
    called on the caller's loop. Cancelling the awaiting task does not stop
    the point that is running (it finishes on its thread); the result is then
    discarded.
    """
    loop = asyncio.get_running_loop()
    outcomes = await asyncio.to_thread(
        run_bench,
        config,
        on_point=_on_loop(loop, on_point),
        on_request=_on_loop(loop, on_request),
        progress=progress,
    )
    await asyncio.sleep(0)  # let callbacks scheduled by the worker's last point run first
    return outcomes
