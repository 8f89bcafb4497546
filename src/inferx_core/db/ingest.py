"""Result folders into the database: InferX results and vLLM / InferenceX files.

The folders are read by :func:`inferx_core.interop.folders.read_folders` (the
reader the dashboard uses too): every distinct version of a point is stored
(replicates of a point id give ``db regress`` its run-to-run spread); vLLM
``bench serve`` results and InferenceX aggregates are imported; files of
neither kind are listed as skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferx_core.db.store import IngestReport, ResultsDB
from inferx_core.interop.folders import read_folders
from inferx_core.results.model import PointResultBase

__all__ = ["PointIngester", "ingest_paths"]


def ingest_paths(db: ResultsDB, paths: Iterable[Path | str], label: str | None) -> IngestReport:
    """Every result under ``paths`` into ``db`` (idempotent), with ``label``."""
    found = read_folders(paths)
    report = db.ingest(found.results, label, found.sources)
    report.skipped += found.skipped
    report.ignored += found.ignored
    return report


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
