"""Timestamped request traces: read, window and speed up the requests a replay sends.

Formats (``docs/workloads.md`` has the exact field semantics):

* ``mooncake``: JSONL, one request per line: ``timestamp`` (milliseconds),
  ``input_length`` and ``output_length`` (tokens), optional ``hash_ids``
  (one id per 512-token block of the prompt; equal ids mean equal blocks,
  so equal leading ids mean an equal prefix).
* ``azure``: the Azure LLM inference trace CSV with a header naming
  ``TIMESTAMP`` (a datetime such as ``2023-11-16 18:15:46.6805900``),
  ``ContextTokens`` and ``GeneratedTokens``; other columns are ignored.
* ``inferx``: InferX's session trace (agentic sessions of turns), read by
  :mod:`inferx_core.load.prompts.session_trace`; :func:`select_sessions` windows and
  speeds up its sessions the same way.

Times count from the trace's earliest request. :func:`select_requests`
keeps the window ``[start, end)`` seconds of trace time, then the first
``limit`` requests, and turns each time into the replay's arrival
``at_s = (t - t0 - start) / speedup``. A bad file raises :class:`TraceError`
naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from inferx_core.config.parsing import ParseError, loads_data_json
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.dataset import DatasetError, check_regular_file
from inferx_core.load.prompts.session_trace import SessionSpec, read_session_trace

__all__ = [
    "BLOCK_TOKENS",
    "TraceError",
    "TraceFormat",
    "TraceRequest",
    "check_trace_file",
    "read_trace",
    "select_requests",
    "select_sessions",
    "trace_rate",
]

TraceFormat = Literal["mooncake", "azure", "inferx"]
#: Tokens per Mooncake hash block (the trace's block size).
BLOCK_TOKENS = 512

_AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?"
)
_EPOCH = datetime(1970, 1, 1)


class TraceError(UserFacingError, ValueError):
    """A trace file is unusable; the message names the file, line and field."""


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: when (ns of trace time), how long in and out, its blocks."""

    time_ns: int  # trace time, from the file's own origin (not yet relative to t0)
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] | None = None
    line: int = 0
    at_s: float | None = None  # the replay arrival, set by select_requests


def _bad(path: Path, line: int, field: str, problem: str) -> TraceError:
    return TraceError(f"{path}:{line}: field {field!r}: {problem}")


def _count(path: Path, line: int, field: str, value: Any) -> int:
    """A token count: an integer >= 1 (12 or 12.0, also as a CSV string)."""
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _bad(path, line, field, f"{value!r} is not a number") from None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise _bad(path, line, field, f"must be an integer >= 1, got {value!r}")
    if not math.isfinite(number) or number != int(number) or number < 1:
        raise _bad(path, line, field, f"must be an integer >= 1, got {value!r}")
    return int(number)


def _hash_ids(path: Path, line: int, value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(h, int) and not isinstance(h, bool) and h >= 0 for h in value
    ):
        raise _bad(path, line, "hash_ids", "must be a list of integers >= 0")
    return tuple(value)


def _mooncake_line(path: Path, lineno: int, text: str) -> TraceRequest:
    try:
        obj = loads_data_json(text)
    except ParseError as exc:
        raise TraceError(f"{path}:{lineno}: {exc.reason}") from None
    if not isinstance(obj, dict):
        raise TraceError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
    for field in ("timestamp", "input_length", "output_length"):
        if field not in obj:
            raise _bad(
                path,
                lineno,
                field,
                "missing (Mooncake lines need timestamp, "
                "input_length, output_length and optionally hash_ids)",
            )
    ts = obj["timestamp"]
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) or ts < 0:
        raise _bad(path, lineno, "timestamp", f"must be milliseconds >= 0, got {ts!r}")
    return TraceRequest(
        time_ns=round(ts * 1_000_000),
        input_tokens=_count(path, lineno, "input_length", obj["input_length"]),
        output_tokens=_count(path, lineno, "output_length", obj["output_length"]),
        hash_ids=_hash_ids(path, lineno, obj.get("hash_ids")),
        line=lineno,
    )


def _read_text(path: Path) -> str:
    try:
        check_regular_file(path)  # a FIFO would block the read below forever
    except DatasetError as exc:
        raise TraceError(str(exc)) from None
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError(
            f"{path}: no such trace file (relative paths start at {Path.cwd()})"
        ) from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the trace: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text ({exc})") from None


def read_mooncake(path: str | Path) -> list[TraceRequest]:
    """The requests of a Mooncake JSONL trace (blank lines skipped)."""
    p = Path(path)
    return [
        _mooncake_line(p, n, line)
        for n, line in enumerate(_read_text(p).splitlines(), start=1)
        if line.strip()
    ]


def parse_datetime_ns(text: str) -> int:
    """``2023-11-16 18:15:46.6805900`` as ns since 1970 (naive times read as UTC); any
    number of fractional digits up to 9, an optional ``Z``/``+hh:mm`` offset."""
    m = _DATETIME.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a datetime like 2023-11-16 18:15:46.6805900")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    whole = int((datetime(y, mo, d, h, mi, s) - _EPOCH).total_seconds())
    frac = (m.group(7) or "").ljust(9, "0")
    offset = m.group(8)
    shift = 0
    if offset and offset != "Z":
        sign = -1 if offset[0] == "-" else 1
        digits = offset[1:].replace(":", "")
        shift = sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return (whole - shift) * 1_000_000_000 + int(frac)


def read_azure(path: str | Path) -> list[TraceRequest]:
    """The requests of an Azure LLM inference trace CSV (``TIMESTAMP``, ``ContextTokens``,
    ``GeneratedTokens``)."""
    p = Path(path)
    rows = csv.reader(_read_text(p).splitlines())
    header = next(rows, None)
    if header is None:
        raise TraceError(f"{p}: empty file; the first line names {', '.join(_AZURE_COLUMNS)}")
    names = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in _AZURE_COLUMNS if c not in names]
    if missing:
        raise TraceError(
            f"{p}:1: the header lacks column(s) {', '.join(missing)} (it has {', '.join(names)}); "
            f"an Azure trace names {', '.join(_AZURE_COLUMNS)}"
        )
    col = {c: names.index(c) for c in _AZURE_COLUMNS}
    out: list[TraceRequest] = []
    for lineno, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) < len(names):
            raise TraceError(f"{p}:{lineno}: {len(row)} cells, the header has {len(names)}")
        try:
            when = parse_datetime_ns(row[col["TIMESTAMP"]])
        except ValueError as exc:
            raise _bad(p, lineno, "TIMESTAMP", str(exc)) from None
        out.append(
            TraceRequest(
                time_ns=when,
                input_tokens=_count(p, lineno, "ContextTokens", row[col["ContextTokens"]]),
                output_tokens=_count(p, lineno, "GeneratedTokens", row[col["GeneratedTokens"]]),
                line=lineno,
            )
        )
    return out


def read_trace(path: str | Path, trace_format: TraceFormat) -> list[TraceRequest]:
    """Every request of the trace file, in time order (stable for equal times)."""
    if trace_format == "mooncake":
        requests = read_mooncake(path)
    elif trace_format == "azure":
        requests = read_azure(path)
    elif trace_format == "inferx":
        requests = _read_inferx(path)
    else:
        raise TraceError(f"unknown trace format {trace_format!r}; use mooncake, azure or inferx")
    if not requests:
        raise TraceError(f"{path}: the trace holds no request")
    return sorted(requests, key=lambda r: r.time_ns)


def _read_inferx(path: str | Path) -> list[TraceRequest]:
    raise TraceError(
        f"{path}: an inferx session trace replays as sessions of turns, not as flat requests; "
        "read it with inferx_core.load.prompts.session_trace.read_session_trace"
    )


def check_trace_file(path: str | Path, trace_format: TraceFormat) -> None:
    """Read the whole trace once, so a bad line fails before anything is launched or sent."""
    if trace_format == "inferx":
        read_session_trace(path)  # SessionTraceError names the file, the line and the field
    else:
        read_trace(path, trace_format)


def select_sessions(
    specs: Sequence[SessionSpec],
    *,
    speedup: float = 1.0,
    window: tuple[float, float | None] | None = None,
    limit: int | None = None,
    untimed: bool = False,
) -> list[SessionSpec]:
    """A timed session trace's sessions starting in ``window`` (seconds after the earliest
    start), the first ``limit``; every timestamp ``t`` becomes ``(t - t0 - start) / speedup``
    and every think time is divided by ``speedup``. ``untimed``: the first ``limit``
    sessions in file order, think times divided by ``speedup``."""
    if not speedup > 0 or not math.isfinite(speedup):
        raise ValueError(f"trace speedup must be a finite number > 0, got {speedup}")
    if untimed:
        return [_scaled(s, 0.0, speedup) for s in specs[:limit]]
    starts = [s.start_s for s in specs if s.start_s is not None]
    if not starts:
        return []
    start, end = window if window is not None else (0.0, None)
    t0 = min(starts)
    chosen = []
    for spec in sorted(specs, key=lambda s: s.start_s or 0.0):
        offset_ns = round(((spec.start_s or 0.0) - t0) * 1e9)  # 10.2 - 10.0 is 0.1999...
        if offset_ns < round(start * 1e9) or (end is not None and offset_ns >= round(end * 1e9)):
            continue
        chosen.append(_scaled(spec, t0 + start, speedup))
        if limit is not None and len(chosen) >= limit:
            break
    return chosen


def _scaled(spec: SessionSpec, origin: float, speedup: float) -> SessionSpec:
    """``spec`` with timestamps counted from ``origin`` and every time divided by speedup."""
    turns = tuple(
        replace(
            t,
            timestamp_s=None if t.timestamp_s is None else (t.timestamp_s - origin) / speedup,
            think_time_s=None if t.think_time_s is None else t.think_time_s / speedup,
        )
        for t in spec.turns
    )
    return replace(spec, turns=turns)


def select_requests(
    requests: Sequence[TraceRequest],
    *,
    speedup: float = 1.0,
    window: tuple[float, float | None] | None = None,
    limit: int | None = None,
) -> list[TraceRequest]:
    """The requests in ``window`` (seconds after the earliest request, ``[start, end)``),
    the first ``limit`` of them, each with ``at_s = (t - t0 - start) / speedup``."""
    if not speedup > 0 or not math.isfinite(speedup):
        raise ValueError(f"trace speedup must be a finite number > 0, got {speedup}")
    if not requests:
        return []
    start, end = window if window is not None else (0.0, None)
    t0 = min(r.time_ns for r in requests)
    start_ns = round(start * 1e9)
    end_ns = None if end is None else round(end * 1e9)
    chosen: list[TraceRequest] = []
    for r in sorted(requests, key=lambda r: r.time_ns):
        offset = r.time_ns - t0
        if offset < start_ns or (end_ns is not None and offset >= end_ns):
            continue
        chosen.append(replace(r, at_s=(offset - start_ns) / 1e9 / speedup))
        if limit is not None and len(chosen) >= limit:
            break
    return chosen


def trace_rate(requests: Iterable[TraceRequest]) -> float | None:
    """Requests per second of a replay: (n - 1) over the span of its arrivals; None with
    fewer than two requests or a zero span."""
    times = [r.at_s for r in requests if r.at_s is not None]
    if len(times) < 2 or max(times) == min(times):
        return None
    return (len(times) - 1) / (max(times) - min(times))
