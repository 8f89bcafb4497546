"""Read result files from several folders (runs, machines) into one set of points.

Every ``*.json`` under the given folders (recursively) that is an InferX
result (has ``schema_version`` and a ``point_id``) is read; sidecars
(``.requests.jsonl``, ``.telemetry.jsonl``) and other JSON files (configs,
platform files, report output) are skipped, unreadable files are listed with
the reason. Each result is parsed into its typed model
(:func:`inferx_core.results.model.parse_result`, which migrates schema 1); a
file that claims to be a result but does not fit the schema is skipped with
the validation error summarised. The same point id found more than once is resolved by keeping
the newest by ``date`` (then ``finished_at``; ties: an ``ok`` result over a
failed one, then the path that sorts last) and every such case is reported
as a :class:`Conflict`:

- ``identical``: the same content twice (a copied folder); harmless.
- ``rerun``: an older result of the same point on the same machine was replaced.
- ``different_platform``: the two come from different hardware or hosts;
  the older one is hidden, which is rarely what one wants: name the runs
  per machine (``name:`` in the config) so their point ids differ.
- ``same_date``: different content with the same date; the choice above is
  arbitrary but deterministic.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from inferx_core.config.parsing import ParseError, loads_json, read_bounded
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.requests import failure_kind
from inferx_core.results.files import REQUESTS_SUFFIX, RESULT_SUFFIX, TELEMETRY_SUFFIX
from inferx_core.results.model import PointResultBase, ResultSchemaError, parse_result

ConflictKind = Literal["identical", "rerun", "different_platform", "same_date"]

__all__ = [
    "Conflict",
    "LoadedResults",
    "find_result_files",
    "is_result",
    "load_results",
    "read_json",
    "requests_sidecar",
    "sidecar_mismatch",
    "telemetry_sidecar",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class Conflict:
    """One point id found in several files; ``kept`` won, ``dropped`` lost."""

    point_id: str
    kind: ConflictKind
    kept: Path
    dropped: tuple[Path, ...]
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {
            "point_id": self.point_id,
            "kind": self.kind,
            "kept": str(self.kept),
            "dropped": [str(p) for p in self.dropped],
            "detail": self.detail,
        }


@dataclass
class LoadedResults:
    """The merged points (one per point id, sorted by id) and what happened on the way."""

    results: list[PointResultBase] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    # Every distinct version of each point id (newest first), for run-to-run spread.
    versions: dict[str, list[PointResultBase]] = field(default_factory=dict)

    def path_of(self, result: PointResultBase) -> Path | None:
        return self.paths.get(result.point_id)

    @property
    def unusable(self) -> list[tuple[Path, str]]:
        """Skipped files that may have been results: unreadable, invalid or over a limit
        (JSON files that are plainly not results, such as configs, are left out)."""
        return [(p, why) for p, why in self.skipped if not why.startswith(NOT_A_RESULT)]

    @property
    def warnings(self) -> list[str]:
        """Conflicts worth a person's attention (identical copies are not), unusable files."""
        return [
            f"{c.point_id}: {c.kind}: {c.detail}" for c in self.conflicts if c.kind != "identical"
        ] + [f"{path}: skipped: {why}" for path, why in self.unusable]


#: Marks a folder of exported files that readers of InferX results skip.
EXPORT_MARKER = ".inferx-export"
#: How a skip reason starts for JSON that is not a result at all (not worth a warning).
NOT_A_RESULT = "not an InferX result"
#: A result is tens of kilobytes; this bounds what one file can make a reader hold.
MAX_RESULT_BYTES = 64 << 20
#: A sidecar line is one request or one telemetry sample.
MAX_SIDECAR_LINE = 4 << 20


def read_json(path: Path, max_bytes: int = MAX_RESULT_BYTES) -> Any:
    """A JSON file as read by every reader of results and imports: strict and bounded.

    NaN, Infinity, nesting over :data:`~inferx_core.config.parsing.MAX_DEPTH` levels, huge
    integers and files over ``max_bytes`` raise :class:`ParseError` (as does invalid
    JSON or UTF-8), whose message is the reason to show; I/O failures raise ``OSError``.
    """
    return loads_json(read_bounded(path, max_bytes, "result file"))


def is_result(data: Any) -> bool:
    """True when ``data`` claims to be a result: a schema version and a point id (at the
    top in schema 1, in ``identity`` from schema 2)."""
    if not isinstance(data, dict) or "schema_version" not in data:
        return False
    identity = data.get("identity")
    return "point_id" in data or (isinstance(identity, dict) and "point_id" in identity)


def find_result_files(paths: Iterable[Path | str]) -> list[Path]:
    """``*.json`` files under each folder (recursively), or the files given; sorted, unique."""
    found: set[Path] = set()
    for entry in paths:
        path = Path(entry)
        if path.is_dir():
            # Folders of exports (vLLM/InferenceX files, `inferx export`) hold no results.
            exports = {m.parent for m in path.rglob(EXPORT_MARKER)}
            found.update(
                p
                for p in path.rglob(f"*{RESULT_SUFFIX}")
                if p.is_file() and _not_hidden(p, path) and not exports.intersection(p.parents)
            )
        elif path.is_file():
            found.add(path)
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    return sorted(found)


def _not_hidden(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _parse_date(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed


def _recency(result: PointResultBase, path: Path) -> tuple[dt.datetime, dt.datetime, int, str]:
    return (
        _parse_date(result.identity.date) or _EPOCH,
        _parse_date(result.identity.finished_at) or _EPOCH,
        1 if result.status == "ok" else 0,
        str(path),
    )


def _platform_signature(result: PointResultBase) -> tuple[Any, ...]:
    # platform and config stay free-form dicts in the model (their own schemas).
    platform: Mapping[str, Any] = result.provenance.platform or {}
    host = (platform.get("host") or {}).get("hostname")
    accs = tuple(sorted(str(a.get("name")) for a in platform.get("accelerators") or []))
    gpu_type = ((result.provenance.config or {}).get("cost") or {}).get("gpu_type")
    return (host, accs, gpu_type, result.provenance.base_url if not platform else None)


def _validation_summary(exc: ValidationError, limit: int = 3) -> str:
    """The first few pydantic errors as ``loc: msg``; the full dump is pages long."""
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in errors[:limit]
    ]
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more


def _parse(path: Path, out: LoadedResults) -> PointResultBase | None:
    """The file's typed result, or None with the reason added to ``out.skipped``."""
    try:
        data = read_json(path)
    except OSError as exc:
        out.skipped.append((path, f"cannot read: {exc.strerror or exc}"))
        return None
    except ParseError as exc:
        out.skipped.append((path, str(exc)))
        return None
    if not is_result(data):
        out.skipped.append((path, f"{NOT_A_RESULT} (no schema_version/point_id)"))
        return None
    try:
        return parse_result(data)
    except ValidationError as exc:
        out.skipped.append((path, f"invalid result: {_validation_summary(exc)}"))
    except (ResultSchemaError, ValueError, KeyError, TypeError) as exc:
        # the schema-1 migration raises plain errors on a malformed old file
        out.skipped.append((path, f"invalid result: {exc}"))
    return None


def load_results(paths: Iterable[Path | str]) -> LoadedResults:
    """Read and merge the results under ``paths`` (folders, recursively, or files)."""
    out = LoadedResults()
    by_id: dict[str, list[tuple[Path, PointResultBase]]] = {}
    for path in find_result_files(paths):
        if path.name.endswith((REQUESTS_SUFFIX, TELEMETRY_SUFFIX)):
            continue  # sidecars are .jsonl; kept for safety
        result = _parse(path, out)
        if result is not None:
            by_id.setdefault(result.point_id, []).append((path, result))
    for pid in sorted(by_id):
        entries = sorted(by_id[pid], key=lambda e: _recency(e[1], e[0]), reverse=True)
        kept_path, kept = entries[0]
        out.results.append(kept)
        out.paths[pid] = kept_path
        distinct: list[PointResultBase] = []
        for _, data in entries:
            if not any(data == seen for seen in distinct):
                distinct.append(data)
        out.versions[pid] = distinct
        if len(entries) > 1:
            out.conflicts.append(_conflict(pid, entries))
    return out


def _conflict(pid: str, entries: list[tuple[Path, PointResultBase]]) -> Conflict:
    kept_path, kept = entries[0]
    others = entries[1:]
    dropped = tuple(p for p, _ in others)
    if all(data == kept for _, data in others):
        return Conflict(pid, "identical", kept_path, dropped, "the same result in several files")
    differing = [(p, d) for p, d in others if d != kept]
    platforms = {_platform_signature(d) for _, d in differing}
    if platforms != {_platform_signature(kept)}:
        return Conflict(
            pid,
            "different_platform",
            kept_path,
            dropped,
            f"results from different machines share this point id; kept {kept_path} "
            f"(date {kept.identity.date}), hid {', '.join(str(p) for p, _ in differing)}; "
            "name each machine's run (name: in the config) to keep both",
        )
    newest = _recency(kept, kept_path)[:2]
    if any(_recency(d, p)[:2] == newest for p, d in differing):
        return Conflict(
            pid,
            "same_date",
            kept_path,
            dropped,
            f"different results with the same date {kept.identity.date}; kept {kept_path}",
        )
    return Conflict(
        pid,
        "rerun",
        kept_path,
        dropped,
        f"kept the newest ({kept.identity.date}), replaced "
        + ", ".join(f"{p} ({d.identity.date})" for p, d in differing),
    )


def _sidecar(result_path: Path, suffix: str) -> Path | None:
    name = result_path.name
    if not name.endswith(RESULT_SUFFIX):
        return None
    path = result_path.with_name(name[: -len(RESULT_SUFFIX)] + suffix)
    return path if path.is_file() else None


def telemetry_sidecar(result_path: Path) -> Path | None:
    """``<point>.telemetry.jsonl`` next to a result file, when it exists."""
    return _sidecar(result_path, TELEMETRY_SUFFIX)


def requests_sidecar(result_path: Path) -> Path | None:
    """``<point>.requests.jsonl`` next to a result file, when it exists."""
    return _sidecar(result_path, REQUESTS_SUFFIX)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL sidecar, parsed as strictly as results (:func:`read_json`).

    A torn last line (killed writer) is ignored, and so is a line that is not a
    row: invalid, with NaN, nested too deep, or over :data:`MAX_SIDECAR_LINE`.
    """
    rows = []
    with path.open("rb") as handle:
        while line := handle.readline(MAX_SIDECAR_LINE + 1):
            if len(line) > MAX_SIDECAR_LINE and not line.endswith(b"\n"):
                handle.readline()  # drop the rest of the over-long line
                continue
            try:
                row = loads_json(line.decode("utf-8")) if line.strip() else None
            except (ParseError, UnicodeDecodeError):
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def records_from_jsonl(path: Path) -> list[RequestRecord]:
    """The request records of a ``.requests.jsonl`` sidecar (warmup included, flagged).

    Unknown keys are ignored, so newer sidecars still read; a row that is not a
    record (a torn or foreign line) is skipped.
    """
    fields = set(RequestRecord.__dataclass_fields__)
    records = []
    for row in read_jsonl(path):
        try:
            records.append(RequestRecord(**{k: v for k, v in row.items() if k in fields}))
        except TypeError:
            continue
    return records


def read_request_records(result_path: Path) -> list[RequestRecord] | None:
    """The records beside a result file; None when the sidecar is missing."""
    path = requests_sidecar(result_path)
    return None if path is None else records_from_jsonl(path)


def sidecar_mismatch(result: PointResultBase, records: Sequence[RequestRecord]) -> str | None:
    """How the measured ``records`` disagree with the counts of ``result``; None if they
    agree. A sidecar of another run or point (copied, renamed, torn) fails this.
    Warmup records are not compared: no figure is computed from them."""
    load = result.load
    if load is None:
        return None
    measured = [r for r in records if not r.warmup]
    # completed as the summary counted it: a reply cut short under ignore_eos failed
    ignore_eos = result.workload is not None and result.workload.ignore_eos is True
    completed = sum(failure_kind(r, ignore_eos) is None for r in measured)
    counts = (
        ("measured requests", len(measured), load.total_requests),
        ("completed", completed, load.completed),
    )
    diffs = [
        f"{name}: {got} in the sidecar, {want} in the result"
        for name, got, want in counts
        if want is not None and got != want
    ]
    return "; ".join(diffs) or None
