"""Result folders as typed results: InferX results plus vLLM and InferenceX files.

:func:`read_folders` reads InferX results with the results reader
(:func:`inferx_core.results.read.load_results`: schema-1 files migrated, every
distinct version of a point kept) and tries the JSON files that are not InferX
results as vLLM ``bench serve`` results and InferenceX aggregates
(:mod:`.importers`). One reader for everything that reads folders this way: the
database's ``ingest`` and the dashboard.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from inferx_core.errors import UserFacingError
from inferx_core.results.model import PointResultBase
from inferx_core.results.read import NOT_A_RESULT, load_results

__all__ = ["FolderResults", "read_folders"]


@dataclass
class FolderResults:
    """What :func:`read_folders` found under its paths."""

    #: every distinct version of each InferX point (newest first), then the imported points
    results: list[PointResultBase] = field(default_factory=list)
    #: index in ``results`` -> the file it came from (older versions of a point have none)
    sources: dict[int, str] = field(default_factory=dict)
    #: (path, why) of files that could not be used: broken results, broken imports
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: JSON files of another kind (configs, platform files): not an error
    ignored: list[str] = field(default_factory=list)

    def add(self, result: PointResultBase, source: str | None) -> None:
        if source is not None:
            self.sources[len(self.results)] = source
        self.results.append(result)


def _imported(path: Path) -> tuple[list[PointResultBase], str | None]:
    """(results, None) from a vLLM / InferenceX file; ([], why) for a broken one;
    ([], "") for JSON of another kind (configs, platform files: ignored, not an error)."""
    from inferx_core.interop.importers import import_data, read_import, sniff

    try:
        data = read_import(path)  # as strict as the result readers: NaN, nesting, size
        if sniff(data, path) is None:
            return [], ""
        return list(import_data(data, path)), None
    except UserFacingError as exc:
        return [], str(exc)
    except (ValueError, KeyError, TypeError) as exc:  # a file that sniffs right but is malformed
        return [], f"{path}: cannot import: {exc}"


def read_folders(paths: Iterable[Path | str]) -> FolderResults:
    """Every result under ``paths``: InferX results, then vLLM / InferenceX files."""
    loaded = load_results(paths)
    out = FolderResults()
    for pid in sorted(loaded.versions):
        for i, version in enumerate(loaded.versions[pid]):
            # the newest version is the one with a path
            newest = i == 0 and pid in loaded.paths
            out.add(version, str(loaded.paths[pid]) if newest else None)
    for path, why in loaded.skipped:
        if not why.startswith(NOT_A_RESULT):
            out.skipped.append((str(path), why))
            continue
        found, reason = _imported(Path(path))
        if reason == "":
            out.ignored.append(str(path))
        elif reason is not None:
            out.skipped.append((str(path), reason))
        for result in found:
            out.add(result, str(path))
    return out
