"""Logging setup (structlog): readable console lines for people, JSON for machines.

Every event passes through a redaction processor, so a token in an env dict,
an argv or a message never reaches the output.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO

from inferx_core.sdk.redact import redact

LogFormat = Literal["console", "json"]


def redact_processor(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    return redact(event_dict)


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

    stream = stream or _CurrentStderr()  # type: ignore[assignment]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=stream.isatty())
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
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str | None = None) -> Any:
    import structlog

    return structlog.get_logger(name)
