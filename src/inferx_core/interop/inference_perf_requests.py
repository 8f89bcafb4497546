"""inference-perf's per-request report, ``per_request_lifecycle_metrics.json`` (written with
``report.request_lifecycle.per_request: true``), as request records.

One entry per request: ``start_time`` and ``end_time`` (seconds of the client's
``time.perf_counter()``: one clock for the run, its origin arbitrary) and, with the
default ``per_request_fields``, the request body (``request``: ``max_tokens``,
``ignore_eos``), ``info.response_metrics`` (``chunk_times``: when each content-bearing SSE
message was read, role-only and usage chunks left out; ``server_usage``: the server's
usage; ``output_tokens``: inference-perf's own count), ``info.request_metrics.text.
input_tokens`` and ``error`` (``error_type``, ``error_msg``). inference-perf 0.7 can leave
fields out (``per_request_fields``): an entry without ``info`` has no chunk times. It does
not write ``scheduled_time`` or the stage of a request.

inference-perf stamps each SSE message as it splits it out of a read (one
``perf_counter()`` per message), so the messages of one read are microseconds apart,
never 0. A gap under :data:`READ_GAP_NS` is taken as one read, the zero gap InferX's own
client records: splitting and parsing one message takes ~10 µs, and no server writes
two tokens of one stream less than a millisecond apart except in one write.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core.config.parsing import ParseError, loads_yaml, read_bounded
from inferx_core.errors import UserFacingError
from inferx_core.load.records.request import ErrorKind, RequestRecord

__all__ = [
    "PER_REQUEST_NAME",
    "READ_GAP_NS",
    "SUMMARY_NAME",
    "inference_perf_records",
    "is_inference_perf_requests",
    "read_with_summary",
    "requested_output",
    "server_counted",
    "tool_counts",
]

PER_REQUEST_NAME = "per_request_lifecycle_metrics.json"
#: The run's config, which inference-perf writes beside its reports.
CONFIG_NAME = "config.yaml"
SUMMARY_NAME = "summary_lifecycle_metrics.json"
#: Chunks stamped closer than this were split out of one read (see the module's doc).
READ_GAP_NS = 100_000
_NS = 1e9


def is_inference_perf_requests(data: Any) -> bool:
    """The per-request report: a list of entries with start and end times."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(
            isinstance(r, dict) and "start_time" in r and "end_time" in r and "error" in r
            for r in data
        )
    )


def read_with_summary(path: Path | None) -> bool:
    """A per-request report beside its run's summary is read with the summary (one run)."""
    if path is None or path.name != PER_REQUEST_NAME:
        return False
    return (path.parent / SUMMARY_NAME).is_file()


def _body(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = entry.get("request")
    try:
        body = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _reads(times: Sequence[Any]) -> list[int]:
    """Each chunk's time in ns; a chunk under READ_GAP_NS after the one before was read
    with it and gets its time."""
    out: list[int] = []
    for t in times:
        ns = round(float(t) * _NS)
        out.append(out[-1] if out and 0 <= ns - out[-1] < READ_GAP_NS else ns)
    return out


def _error(entry: Mapping[str, Any]) -> tuple[str | None, ErrorKind | None, int | None]:
    error = entry.get("error")
    if not error:
        return None, None, None
    kind_text = str(error.get("error_type") or "error") if isinstance(error, dict) else "error"
    text = f"{kind_text}: {error.get('error_msg')}" if isinstance(error, dict) else str(error)
    if kind_text.startswith("HTTP Error "):
        code = kind_text.removeprefix("HTTP Error ").split()[0]
        return text, "http_status", int(code) if code.isdigit() else None
    if kind_text in ("TimeoutError", "ServerTimeoutError"):
        return text, "timeout", None
    connection = ("ClientConnectorError", "ServerDisconnectedError", "ClientOSError")
    return text, "connection" if kind_text in connection else "stream_error", None


def _record(i: int, entry: Mapping[str, Any]) -> RequestRecord:
    info = entry.get("info") or {}
    response = info.get("response_metrics") or {}
    usage = response.get("server_usage") or {}
    text = (info.get("request_metrics") or {}).get("text") or {}
    body = _body(entry)
    start = round(float(entry["start_time"]) * _NS)
    error, kind, code = _error(entry)
    chunks = [] if error else _reads(response.get("chunk_times") or [])
    prompt = _int(text.get("input_tokens")) or _int(info.get("input_tokens")) or 0
    return RequestRecord(
        request_id=i,
        prompt_tokens=prompt,
        max_tokens=_int(body.get("max_tokens")) or _int(body.get("max_completion_tokens")) or 0,
        send_ns=start,
        chunk_ns=chunks,
        usage_output_tokens=_int(usage.get("completion_tokens")),
        usage_prompt_tokens=_int(usage.get("prompt_tokens")),
        end_ns=max(round(float(entry["end_time"]) * _NS), chunks[-1] if chunks else start),
        error=error,
        error_kind=kind,
        status_code=code,
    )


def inference_perf_records(data: Sequence[Mapping[str, Any]], path: Path) -> list[RequestRecord]:
    """Every entry of the per-request report as a record; a broken entry is a user error
    naming it."""
    records = []
    for i, entry in enumerate(data):
        try:
            records.append(_record(i, entry))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = f"the field {exc} is missing" if isinstance(exc, KeyError) else str(exc)
            why = f"request {i + 1}: {what} (edited or truncated?)"
            raise UserFacingError(f"{path}: {why}") from None
    return records


def requested_output(data: Sequence[Mapping[str, Any]]) -> float | None:
    """The median ``max_tokens`` the request bodies asked for (None: no bodies kept)."""
    asked = [n for e in data if (n := _int(_body(e).get("max_tokens"))) is not None]
    return float(statistics.median(asked)) if asked else None


def tool_counts(data: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(inference-perf's own output_tokens, the server's usage) of every request with both."""
    pairs = []
    for entry in data:
        response = (entry.get("info") or {}).get("response_metrics") or {}
        mine = _int(response.get("output_tokens"))
        usage = _int((response.get("server_usage") or {}).get("completion_tokens"))
        if mine is not None and usage is not None and not entry.get("error"):
            pairs.append((mine, usage))
    return pairs


def server_counted(folder: Path) -> bool:
    """Whether the run's figures count the server's usage (``report.request_lifecycle.
    use_server_output_tokens`` in the config.yaml inference-perf writes beside its
    reports); its default, and without that file, is its own tokenizer's count."""
    try:
        config, _ = loads_yaml(read_bounded(folder / CONFIG_NAME, 1 << 20, "config"))
    except (OSError, ParseError):
        return False
    report = config.get("report") if isinstance(config, dict) else None
    lifecycle = report.get("request_lifecycle") if isinstance(report, dict) else None
    return isinstance(lifecycle, dict) and lifecycle.get("use_server_output_tokens") is True
