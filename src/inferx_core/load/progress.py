"""A progress display for load points: rich on a terminal, silent otherwise.

Counters are bumped per completed request (a few integer adds); the display
refreshes from its own timer at 2 Hz, so the request path pays nothing for it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from inferx_core.load.records import RequestRecord


class LoadProgress:
    def __init__(self, label: str, total: int | None, *, enabled: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.completed = 0
        self.failed = 0
        self.output_tokens = 0
        self.started = time.perf_counter()
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._progress: Any = None
        self._task: Any = None

    def on_complete(self, record: RequestRecord) -> None:
        if record.warmup:
            return
        if record.ok:
            self.completed += 1
            self.output_tokens += record.output_tokens
        else:
            self.failed += 1

    def __enter__(self) -> LoadProgress:
        if self.enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} ok, {task.fields[failed]} failed"),
                TextColumn("{task.fields[tps]} tok/s"),
                TimeElapsedColumn(),
                refresh_per_second=2,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total, failed=0, tps="0")
        return self

    def refresh(self) -> None:
        if self._progress is None:
            return
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self._progress.update(
            self._task,
            completed=self.completed,
            failed=self.failed,
            tps=f"{self.output_tokens / elapsed:,.0f}",
        )

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self.refresh()
            self._progress.stop()
