"""Result folders into the database: InferX results and vLLM / InferenceX files.

The folders are read by :func:`inferx_core.interop.folders.read_folders` (the
reader the dashboard uses too): every distinct version of a point is stored
(replicates of a point id give ``db regress`` its run-to-run spread); vLLM
``bench serve`` results and InferenceX aggregates are imported; files of
neither kind are listed as skipped with the reason.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferx_core.db.store import IngestReport, ResultsDB
from inferx_core.errors import UserFacingError
from inferx_core.interop.folders import FolderResults, read_folders
from inferx_core.results.model import PointResultBase

__all__ = ["IngestOutcome", "PointIngester", "ingest_into", "ingest_paths"]


def ingest_paths(
    db: ResultsDB, paths: Iterable[Path | str], label: str | None, found: Any = None
) -> IngestReport:
    """Every result under ``paths`` (or what was ``found`` there) into ``db`` (idempotent),
    with ``label``."""
    found = found if found is not None else read_folders(paths)
    report = db.ingest(found.results, label, found.sources)
    report.skipped += found.skipped
    report.ignored += found.ignored
    return report


class IngestOutcome:
    """What ``inferx db ingest`` prints: the report, the points now stored, where."""

    def __init__(self, report: IngestReport, total: int, url: str) -> None:
        self.report, self.total, self.url = report, total, url


def _duckdb_file(url: str) -> Path | None:
    from inferx_core.db.backends import _DUCKDB_PREFIX, is_postgres

    return None if is_postgres(url) else Path(url.removeprefix(_DUCKDB_PREFIX)).expanduser()


def _created_by_us(path: Path) -> list[Path]:
    """What opening a DuckDB file at ``path`` would create: the file, its WAL, and the
    folders above it that do not exist yet (outermost last); nothing for a file that is
    there already."""
    if path.exists():
        return []  # a database of before: its own transaction rolls a failure back
    made = [path, path.with_name(path.name + ".wal")]
    folder = path.parent
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    return made


def _remove(made: list[Path]) -> None:
    for p in made:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def ingest_into(url: str | None, paths: Iterable[Path | str], label: str | None) -> IngestOutcome:
    """``inferx db ingest``: the folders are read first (nothing is created for a read that
    fails); a failed ingest (a full disk, a write refused) removes the database file, its
    WAL and the folders that this call created, so no 0-byte database is left behind. A
    database that was there before is left to its own transaction's rollback (its empty
    WAL removed on close: :class:`~inferx_core.db.backends.DuckDBConnection`)."""
    from inferx_core.db.backends import describe_url, resolve_url
    from inferx_core.db.store import open_db

    found: FolderResults = read_folders(paths)
    resolved = resolve_url(url)
    file = _duckdb_file(resolved)
    made = _created_by_us(file) if file is not None else []
    try:
        with open_db(resolved) as db:
            report = ingest_paths(db, paths, label, found)
            return IngestOutcome(report, db.count(), db.url)
    except UserFacingError:
        _remove(made)
        raise
    except Exception as exc:  # the database's own error (duckdb.IOException: disk full)
        _remove(made)
        left = "the database file it created was removed" if made else "it was rolled back"
        raise UserFacingError(
            f"db ingest into {describe_url(resolved)} failed ({type(exc).__name__}: {exc}); "
            f"nothing was stored ({left}): free some space, or give --db another place"
        ) from None
    except BaseException:  # Ctrl-C: the same clean-up, then the interrupt
        _remove(made)
        raise


class PointIngester:
    """``--db`` on ``bench``/``run``: stores each point as it finishes (an ``on_point``).

    Opens the database per point (a DuckDB file is then free between points for
    other readers); a failure is printed and the run goes on: the result file is
    on disk, and ``inferx db ingest`` stores it later.
    """

    def __init__(self, url: str, label: str | None, then: Any = None) -> None:
        self.url = url
        self.label = label
        self.then = then
        self.report = IngestReport()
        self.errors: list[str] = []

    def __call__(self, outcome: Any) -> None:
        import sys

        from inferx_core.db.store import open_db

        if self.then is not None:
            self.then(outcome)
        result: PointResultBase = outcome.result
        path = getattr(outcome, "path", None)
        try:
            with open_db(self.url) as db:
                self.report.merge(db.ingest([result], self.label, {0: str(path)} if path else None))
        except Exception as exc:  # never lose a run to the database being away
            message = f"{result.point_id}: not stored in the database: {exc}"
            self.errors.append(message)
            sys.stderr.write(f"inferx: {message} (run `inferx db ingest` on the results later)\n")
