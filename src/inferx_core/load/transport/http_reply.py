"""Pure readers of an HTTP/1.x reply: status line, headers, and unusable bodies.

The stateful response parser that calls these is
:class:`inferx_core.load.transport.connection.Connection`.
"""

from __future__ import annotations

import json

from inferx_core.load.records.request import ErrorKind

__all__ = ["parse_headers", "parse_status_line", "unusable_reply"]

_EXCERPT = 500  # characters of a non-200 body kept in ``record.error``


def parse_status_line(line: str) -> tuple[str, int] | None:
    """(HTTP version, status) of a status line, or None when it is not HTTP/1.x."""
    parts = line.split(" ", 2)
    try:
        version = parts[0]
        status = int(parts[1])
    except (IndexError, ValueError):
        return None
    if not version.startswith("HTTP/1."):
        return None
    return version, status


def parse_headers(lines: list[str]) -> dict[str, str]:
    """Header lines as a dict with lower-case names (the last of a repeated name wins)."""
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return headers


def unusable_reply(
    status_code: int | None, body: bytes, content_type: str
) -> tuple[ErrorKind, str]:
    """(error kind, message) for a complete reply that is not an event stream.

    A non-200 status is ``http_status`` with an excerpt of the body. A 200
    is either an error object (``stream_error``) or a server that ignored
    ``stream=true`` (``malformed``).
    """
    text = body.decode("utf-8", "replace")
    if status_code != 200:
        excerpt = " ".join(text[:_EXCERPT].split())
        return "http_status", f"HTTP {status_code}: {excerpt}"
    try:
        obj = json.loads(body)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and (obj.get("error") is not None or obj.get("object") == "error"):
        err = obj.get("error")
        msg = err.get("message", err) if isinstance(err, dict) else (err or obj.get("message"))
        return "stream_error", f"error in 200 reply: {msg}"
    return (
        "malformed",
        f"expected text/event-stream, got {content_type or 'no content-type'}: "
        + " ".join(text[:200].split()),
    )
