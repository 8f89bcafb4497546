"""Runs samplers on background threads and keeps their time series.

Each sampler gets its own daemon thread reading on an absolute schedule
(start + k x interval, so a slow read does not drift the series), stamped with
``time.perf_counter_ns`` -- the load generator's clock, so samples line up
with the measured window exactly. A failing read is recorded (time, error) and
the thread keeps going; a sampler that cannot start is recorded as
unavailable with its reason. Nothing here invents a value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inferx_core.sdk.numbers import finite_or_none
from inferx_core.sdk.sampler import Sampler, SamplerUnavailable

MIN_INTERVAL_S = 0.01


@dataclass
class SamplerSeries:
    """Everything one sampler produced."""

    name: str
    interval_s: float
    samples: list[tuple[int, dict[str, float | None]]] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    unavailable: str | None = None
    notes: list[str] = field(default_factory=list)

    def metric_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for _, values in self.samples:
            for key in values:
                seen.setdefault(key, None)
        return list(seen)


class _SamplerThread(threading.Thread):
    def __init__(self, sampler: Sampler, series: SamplerSeries) -> None:
        super().__init__(name=f"inferx-sampler-{sampler.name}", daemon=True)
        self.sampler = sampler
        self.series = series
        self.stop_event = threading.Event()
        # Set once the recorder gave up waiting for this thread: a read still in
        # flight then lands nowhere, instead of after the point was summarised.
        self.closed = threading.Event()

    def read_once(self) -> None:
        try:
            # NaN/inf readings (legal in Prometheus text) become "not available".
            values = {k: finite_or_none(v) for k, v in self.sampler.read().items()}
        except Exception as exc:  # a failed read is a gap, never the end of the series
            if not self.closed.is_set():
                self.series.errors.append((time.perf_counter_ns(), f"{type(exc).__name__}: {exc}"))
        else:
            if not self.closed.is_set():
                self.series.samples.append((time.perf_counter_ns(), values))

    def run(self) -> None:
        interval = max(float(self.sampler.interval_s), MIN_INTERVAL_S)
        interval_ns = int(interval * 1e9)
        next_ns = time.perf_counter_ns()
        while not self.stop_event.is_set():
            self.read_once()
            next_ns += interval_ns
            now = time.perf_counter_ns()
            if next_ns < now:  # fell behind (slow read): skip missed slots, keep the grid
                next_ns += ((now - next_ns) // interval_ns + 1) * interval_ns
            self.stop_event.wait((next_ns - now) / 1e9)
        # A closing reading after stop: the series then covers the window's end
        # (stop comes right after the last completion) instead of ending up to
        # one interval early.
        self.read_once()


class TelemetryRecorder:
    """Start samplers, let them run, stop them, hand back their series.

    Use as a context manager around the load: ``with TelemetryRecorder(s):``.
    """

    def __init__(self, samplers: Iterable[Sampler]) -> None:
        self.samplers = list(samplers)
        self.series: list[SamplerSeries] = []
        self._threads: list[_SamplerThread] = []
        self._started = False
        self.started_ns = 0

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.started_ns = time.perf_counter_ns()
        for sampler in self.samplers:
            series = SamplerSeries(name=sampler.name, interval_s=float(sampler.interval_s))
            self.series.append(series)
            try:
                sampler.start()
            except SamplerUnavailable as exc:
                series.unavailable = str(exc)
                continue
            except Exception as exc:  # a broken sampler is reported, not fatal
                series.unavailable = f"start failed: {type(exc).__name__}: {exc}"
                continue
            thread = _SamplerThread(sampler, series)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        for thread in self._threads:
            thread.stop_event.set()
        for thread in self._threads:
            thread.join(timeout=max(5.0, 2 * thread.sampler.interval_s))
            if thread.is_alive():
                # A read is hanging (e.g. a slow /metrics): never close the
                # sampler under it; its late reading is dropped, and said so.
                thread.closed.set()
                thread.series.notes.append("a read was still running at stop; it is dropped")
            else:
                try:
                    thread.sampler.stop()
                except Exception as exc:  # stop must not lose the series
                    thread.series.notes.append(f"stop failed: {type(exc).__name__}: {exc}")
            notes = getattr(thread.sampler, "notes", None)
            if notes:
                thread.series.notes.extend(str(n) for n in notes)
        self._threads.clear()

    def __enter__(self) -> TelemetryRecorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def merged(self) -> list[tuple[int, dict[str, float | None]]]:
        """All samples of all samplers, in time order (for energy and summaries)."""
        rows = [row for series in self.series for row in series.samples]
        rows.sort(key=lambda row: row[0])
        return rows

    def describe(self) -> list[dict[str, Any]]:
        """Per sampler: how many samples, errors, unavailable reason (for the result)."""
        return [
            {
                "name": s.name,
                "interval_s": s.interval_s,
                "samples": len(s.samples),
                "errors": len(s.errors),
                "first_errors": [e for _, e in s.errors[:3]],
                "unavailable": s.unavailable,
                "notes": s.notes,
                "metrics": s.metric_names(),
            }
            for s in self.series
        ]


def series_rows(recorder: TelemetryRecorder, origin_ns: int) -> Iterable[Mapping[str, Any]]:
    """JSONL rows for the telemetry sidecar: one per sample, time relative to ``origin_ns``."""
    for series in recorder.series:
        for t_ns, values in series.samples:
            yield {"sampler": series.name, "t_ns": t_ns, "t_s": (t_ns - origin_ns) / 1e9, **values}
        for t_ns, error in series.errors:
            yield {
                "sampler": series.name,
                "t_ns": t_ns,
                "t_s": (t_ns - origin_ns) / 1e9,
                "error": error,
            }
