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

from inferx_core.config.parsing import loads_json
from inferx_core.config.secrets import scrub
from inferx_core.errors import UserFacingError
from inferx_core.results.model import PointResultBase, parse_result

RESULT_SUFFIX = ".json"
REQUESTS_SUFFIX = ".requests.jsonl"
TELEMETRY_SUFFIX = ".telemetry.jsonl"


def utc_now() -> str:
    """The timestamp every result and job record uses (UTC, seconds)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class ResultWriteError(UserFacingError, OSError):
    """A result or sidecar could not be written (disk full, read-only, no permission).

    Still an OSError (with the cause's errno), so callers that handled one keep working.
    """

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path = path
        why = exc.strerror or str(exc)
        self.message = (
            f"cannot write {path}: {why} (errno {exc.errno}); nothing of this file was left "
            "behind and files written before are intact. Free space or give another "
            "--output folder"
        )
        super().__init__(self.message)
        self.errno, self.strerror = exc.errno, exc.strerror

    def __str__(self) -> str:
        return self.message


def _stage(path: Path, write: Any, *, newline: str | None = None) -> Path:
    """``path``'s content in a fsync'd temporary file beside it; removed again on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ResultWriteError(path, exc) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ResultWriteError(path, exc) from exc
        raise
    return Path(tmp)


def _atomic_write(path: Path, write: Any, *, newline: str | None = None) -> Path:
    tmp = _stage(path, write, newline=newline)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultWriteError(path, exc) from exc
    return path


def _json_writer(data: Any) -> Any:
    text = scrub(json.dumps(data, indent=2, allow_nan=False, default=str))
    return lambda handle: handle.write(text + "\n")


def _jsonl_writer(rows: Iterable[Any]) -> Any:
    def write(handle: Any) -> None:
        for row in rows:
            handle.write(scrub(json.dumps(row, allow_nan=False, default=str)) + "\n")

    return write


def ensure_writable(output_dir: Path) -> None:
    """Fail before any work when ``output_dir`` cannot take a file (read-only, not a folder)."""
    probe = _stage(output_dir / ".inferx-write-probe", lambda handle: handle.write(""))
    probe.unlink(missing_ok=True)


def write_point_files(
    output_dir: Path, result: PointResultBase, sidecars: list[tuple[Path, Iterable[Any]]]
) -> Path:
    """A point's sidecars (JSONL rows) and result, all or nothing, the result renamed last.

    Everything is first written to fsync'd temporary files; only when all of
    them are whole are they renamed into place, the result last, so a result
    file means its sidecars are whole and a full disk leaves no half a point.
    """
    final = result_path(output_dir, result.point_id)
    staged: list[tuple[Path, Path]] = []
    try:
        for path, rows in sidecars:
            staged.append((_stage(path, _jsonl_writer(rows)), path))
        staged.append((_stage(final, _json_writer(result.model_dump(mode="json"))), final))
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException as exc:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, ResultWriteError):
            raise ResultWriteError(final, exc) from exc
        raise
    return final


def write_text_atomic(path: Path, text: str) -> Path:
    """``text`` (UTF-8, line endings as given) written atomically: complete or absent."""
    text = scrub(text)
    return _atomic_write(path, lambda h: h.write(text), newline="")


def write_json_atomic(path: Path, data: Any) -> Path:
    """Strict JSON (no NaN/Infinity), written atomically."""
    return _atomic_write(path, _json_writer(data))


def write_jsonl_atomic(path: Path, rows: Iterable[Any]) -> Path:
    return _atomic_write(path, _jsonl_writer(rows))


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


def read_result(path: Path | str) -> PointResultBase:
    """One result file as its typed model (schema 1 is migrated); parsed as strictly as
    every reader (:mod:`inferx_core.config.parsing`): a ValueError when unusable."""
    return parse_result(loads_json(Path(path).read_text(encoding="utf-8")))


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
