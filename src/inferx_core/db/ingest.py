"""Result folders into the database: InferX results and vLLM / InferenceX files.

InferX results are read with :func:`inferx_core.results.read.load_results`
(schema-1 files are migrated); every distinct version of a point is stored
(replicates of a point id give ``db regress`` its run-to-run spread). JSON
files that are not InferX results are tried as vLLM ``bench serve`` results
and InferenceX aggregates (:func:`inferx_core.interop.importers.import_file`);
files of neither kind are listed as skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inferx_core.db.store import IngestReport, ResultsDB
from inferx_core.errors import UserFacingError
from inferx_core.results.model import PointResultBase

__all__ = ["PointIngester", "ingest_paths"]


def _imported(path: Path) -> tuple[list[PointResultBase], str | None]:
    """(results, None) from a vLLM / InferenceX file; ([], why) for a broken one;
    ([], "") for JSON of another kind (configs, platform files: ignored, not an error)."""
    from inferx_core.interop.importers import import_data, read_import, sniff

    try:
        data = read_import(path)  # as strict as the result readers: NaN, nesting, size
        if sniff(data) is None:
            return [], ""
        return list(import_data(data, path)), None
    except UserFacingError as exc:
        return [], str(exc)
    except (ValueError, KeyError, TypeError) as exc:  # a file that sniffs right but is malformed
        return [], f"{path}: cannot import: {exc}"


def collect(
    paths: Iterable[Path | str],
) -> tuple[list[PointResultBase], dict[int, str], list[tuple[str, str]], list[str]]:
    """(results, index -> source path, [(path, why skipped)], [ignored files]) under ``paths``."""
    from inferx_core.results.read import NOT_A_RESULT, load_results

    loaded = load_results(paths)
    results: list[PointResultBase] = []
    sources: dict[int, str] = {}
    for pid in sorted(loaded.versions):
        for i, version in enumerate(loaded.versions[pid]):
            if i == 0 and pid in loaded.paths:  # the newest version is the one with a path
                sources[len(results)] = str(loaded.paths[pid])
            results.append(version)
    skipped: list[tuple[str, str]] = []
    ignored: list[str] = []
    for path, why in loaded.skipped:
        if not why.startswith(NOT_A_RESULT):
            skipped.append((str(path), why))
            continue
        found, reason = _imported(Path(path))
        if reason == "":
            ignored.append(str(path))
        elif reason is not None:
            skipped.append((str(path), reason))
        for result in found:
            sources[len(results)] = str(path)
            results.append(result)
    return results, sources, skipped, ignored


def ingest_paths(db: ResultsDB, paths: Iterable[Path | str], label: str | None) -> IngestReport:
    """Every result under ``paths`` into ``db`` (idempotent), with ``label``."""
    results, sources, skipped, ignored = collect(paths)
    report = db.ingest(results, label, sources)
    report.skipped += skipped
    report.ignored += ignored
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
