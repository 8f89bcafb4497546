"""A progress display for load points: rich on a terminal, plain lines otherwise.

Counters are bumped per completed request (a few integer adds); the display
refreshes from its own timer at 2 Hz, so the request path pays nothing for it.
Where stderr is not a terminal (a log file, CI, a notebook's captured stream)
an enabled display prints one plain line every ``PLAIN_INTERVAL_S`` and at
the end, never rich's redraws (which show there as blank lines).

A per-request callback (``run_bench(on_request=...)``) is passed down as a
context variable (:func:`request_listener`): every measured request's
``RequestRecord`` goes to it as it completes, without threading a parameter
through each layer.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from inferx_core.load.records.request import RequestRecord

#: Seconds between two plain progress lines (no terminal).
PLAIN_INTERVAL_S = 10.0

RequestListener = Callable[[RequestRecord], None]
_LISTENER: contextvars.ContextVar[RequestListener | None] = contextvars.ContextVar(
    "inferx_request_listener", default=None
)


@contextlib.contextmanager
def request_listener(listener: RequestListener | None) -> Iterator[None]:
    """While inside: every measured request's record also goes to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class LoadProgress:
    def __init__(
        self,
        label: str,
        total: int | None,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.completed = 0
        self.failed = 0
        self.output_tokens = 0
        self.started = time.perf_counter()
        self.stream = stream or sys.stderr
        tty = self.stream.isatty()
        self.enabled = tty if enabled is None else enabled
        self.plain = self.enabled and not tty
        self._last_line = self.started
        self._progress: Any = None
        self._task: Any = None
        self._listener = _LISTENER.get()

    def on_complete(self, record: RequestRecord) -> None:
        if record.warmup:
            return
        if record.ok:
            self.completed += 1
            self.output_tokens += record.output_tokens
        else:
            self.failed += 1
        if self._listener is not None:
            self._tell(record)

    def _tell(self, record: RequestRecord) -> None:
        listener = self._listener  # checked by the caller; re-read for the type checker
        if listener is None:
            return
        try:
            listener(record)
        except Exception as exc:  # the user's callback must not stop the load
            warnings.warn(
                f"on_request callback raised {type(exc).__name__}: {exc}; it is not called "
                "again for this point",
                RuntimeWarning,
                stacklevel=2,
            )
            self._listener = None

    def __enter__(self) -> LoadProgress:
        if self.enabled and not self.plain:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} ok, {task.fields[failed]} failed"),
                TextColumn("{task.fields[tps]} tok/s"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                refresh_per_second=2,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total, failed=0, tps="0")
        return self

    def _tokens_per_s(self) -> str:
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        return f"{self.output_tokens / elapsed:,.0f}"

    def line(self) -> str:
        """The plain progress line: label, done/total, failed, output tok/s, elapsed."""
        total = "?" if self.total is None else str(self.total)
        elapsed = time.perf_counter() - self.started
        return (
            f"{self.label}: {self.completed}/{total} ok, {self.failed} failed, "
            f"{self._tokens_per_s()} tok/s, {elapsed:.1f} s"
        )

    def refresh(self) -> None:
        if self.plain:
            now = time.perf_counter()
            if now - self._last_line >= PLAIN_INTERVAL_S:
                self._last_line = now
                self.stream.write(self.line() + "\n")
                self.stream.flush()
            return
        if self._progress is None:
            return
        self._progress.update(
            self._task, completed=self.completed, failed=self.failed, tps=self._tokens_per_s()
        )

    def __exit__(self, *exc: object) -> None:
        if self.plain:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
        if self._progress is not None:
            self.refresh()
            self._progress.stop()
