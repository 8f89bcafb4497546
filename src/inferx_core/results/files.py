"""Result files: one JSON per load point, written atomically, plus JSONL sidecars.

A result file is either complete or absent: content goes to a temporary file
in the same folder, is flushed to disk, then renamed over the final name.
Every text written here passes :func:`inferx_core.config.secrets.scrub`: a
secret value from a config (an ``engine_env`` value, a header, an API key)
never lands on disk, wherever it turns up (an error message, an argv).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferx_core.config.secrets import scrub
from inferx_core.results.model import PointResultBase, parse_result

RESULT_SUFFIX = ".json"
REQUESTS_SUFFIX = ".requests.jsonl"
TELEMETRY_SUFFIX = ".telemetry.jsonl"


def utc_now() -> str:
    """The timestamp every result and job record uses (UTC, seconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _atomic_write(path: Path, write: Any, *, newline: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """``text`` (UTF-8, line endings as given) written atomically: complete or absent."""
    text = scrub(text)
    return _atomic_write(path, lambda h: h.write(text), newline="")


def write_json_atomic(path: Path, data: Any) -> Path:
    """Strict JSON (no NaN/Infinity), written atomically."""
    text = scrub(json.dumps(data, indent=2, allow_nan=False, default=str))
    return _atomic_write(path, lambda h: h.write(text + "\n"))


def write_jsonl_atomic(path: Path, rows: Iterable[Any]) -> Path:
    def write(handle: Any) -> None:
        for row in rows:
            handle.write(scrub(json.dumps(row, allow_nan=False, default=str)) + "\n")

    return _atomic_write(path, write)


def write_result(output_dir: Path, result: PointResultBase) -> Path:
    """The one writer of result files: ``<output_dir>/<point_id>.json``, atomically."""
    data = result.model_dump(mode="json")
    return write_json_atomic(result_path(output_dir, result.point_id), data)


def result_path(output_dir: Path, point_id: str) -> Path:
    return output_dir / f"{point_id}{RESULT_SUFFIX}"


def requests_path(output_dir: Path, point_id: str) -> Path:
    return output_dir / f"{point_id}{REQUESTS_SUFFIX}"


def telemetry_path(output_dir: Path, point_id: str) -> Path:
    return output_dir / f"{point_id}{TELEMETRY_SUFFIX}"


def read_result(path: Path) -> PointResultBase:
    """One result file as its typed model (schema 1 is migrated)."""
    return parse_result(json.loads(path.read_text(encoding="utf-8")))


def is_complete(output_dir: Path, point_id: str) -> bool:
    """True when the point finished ok (``--resume`` skips it).

    Failed and interrupted points run again: their cause (a crashed engine,
    Ctrl-C) is usually gone on the next attempt. So does a file that cannot
    be read as a result.
    """
    path = result_path(output_dir, point_id)
    if not path.exists():
        return False
    try:
        result = read_result(path)
    except (OSError, ValueError):  # ValueError: bad JSON or not the schema
        return False
    return result.status == "ok"
