"""Logging setup (structlog): readable console lines for people, JSON for machines.

Every event passes through a redaction processor, so a token in an env dict,
an argv or a message never reaches the output.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Literal, TextIO

from inferx_core.sdk.redact import redact

LogFormat = Literal["console", "json"]


def redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> Mapping[str, Any]:
    redacted: Mapping[str, Any] = redact(event_dict)
    return redacted


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was set up.

    An embedding program (or pytest's capture) may replace sys.stderr later;
    a stream bound at set-up would then be a closed file.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def configure_logging(
    fmt: LogFormat = "console", level: str = "info", stream: TextIO | None = None
) -> None:
    import structlog

    # _CurrentStderr has the write/flush/isatty that structlog's PrintLogger uses, not all of TextIO
    sink: TextIO = stream or _CurrentStderr()  # type: ignore[assignment]  # see above
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sink.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            # getLevelName maps a level's name to its number on Python 3.10 too
            # (getLevelNamesMapping is 3.11+: mypy's python_version 3.10 found it)
            logging.getLevelName(level.upper())
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sink),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None) -> Any:
    import structlog

    return structlog.get_logger(name)
