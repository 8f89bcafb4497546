"""The results database: open (creating and migrating the schema), ingest, query.

One interface over DuckDB and PostgreSQL (:mod:`.backends`). Ingest is
idempotent by content: a result already stored (same content hash) is not
stored again; giving it a new label only adds the label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from inferx_core.db.backends import Connection, connect, describe_url, resolve_url
from inferx_core.db.records import (
    PointRow,
    content_hash,
    point_rows,
    result_from_json,
    utc_iso,
)
from inferx_core.db.schema import INDEX_COLUMNS, MIGRATIONS, OWN_TABLES, SCHEMA_VERSION
from inferx_core.errors import UserFacingError
from inferx_core.results.files import utc_now
from inferx_core.results.model import PointResultBase

__all__ = ["Filters", "IngestReport", "ResultsDB", "StoredResult", "open_db"]

_CHUNK = 500
_INSERT_COLUMNS = ("content_hash", *INDEX_COLUMNS, "power_valid", "ingested_at", "result_json")


@dataclass(frozen=True)
class Filters:
    """Which points: each field a set of accepted values (empty: any); dates as ISO text."""

    engine: Sequence[str] = ()
    engine_version: Sequence[str] = ()
    model: Sequence[str] = ()
    hardware: Sequence[str] = ()
    precision: Sequence[str] = ()
    isl: Sequence[int] = ()
    osl: Sequence[int] = ()
    label: Sequence[str] = ()
    status: Sequence[str] = ()
    point_id: Sequence[str] = ()
    series: Sequence[str] = ()
    since: str | None = None  # date >= since (a day or a full ISO time)
    until: str | None = None  # date < until, or within that day when only a day is given

    def where(self, alias: str = "p") -> tuple[str, list[Any]]:
        """A SQL condition on ``points AS alias`` and its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        for f in fields(self):
            values = getattr(self, f.name)
            if f.name in ("since", "until", "label") or not values:
                continue
            marks = ", ".join("?" * len(values))
            if f.name in ("isl", "osl"):
                parts.append(f"{alias}.{f.name} IN ({marks})")
                params += [int(v) for v in values]
            else:  # names are matched without regard to case ("h200" finds "H200")
                parts.append(f"LOWER({alias}.{f.name}) IN ({marks})")
                params += [str(v).lower() for v in values]
        if self.label:
            marks = ", ".join("?" * len(self.label))
            parts.append(
                f"{alias}.content_hash IN "
                f"(SELECT content_hash FROM point_labels WHERE label IN ({marks}))"
            )
            params += list(self.label)
        if self.since:
            parts.append(f"{alias}.date >= ?")
            params.append(utc_iso(self.since) if "T" in self.since else self.since)
        if self.until:
            day_only = "T" not in self.until
            parts.append(f"{alias}.date < ?")
            params.append(self.until + "T99" if day_only else utc_iso(self.until))
        return (" AND ".join(parts) or "TRUE"), params


@dataclass
class IngestReport:
    """What one ingest did: new points stored, points already there, labels added."""

    stored: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    labelled: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    ignored: list[str] = field(default_factory=list)  # JSON files that hold no results

    def merge(self, other: IngestReport) -> None:
        self.stored += other.stored
        self.already += other.already
        self.labelled += other.labelled
        self.skipped += other.skipped
        self.ignored += other.ignored


@dataclass(frozen=True)
class StoredResult:
    """A stored point: its columns (``row``), labels, and the typed result on demand."""

    row: dict[str, Any]
    labels: tuple[str, ...]
    result_json: str

    @property
    def result(self) -> PointResultBase:
        return result_from_json(self.result_json)


class ResultsDB:
    """A connection with the schema at :data:`SCHEMA_VERSION` (see :func:`open_db`)."""

    def __init__(self, con: Connection, url: str) -> None:
        self.con = con
        self.url = url

    def __enter__(self) -> ResultsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    @property
    def kind(self) -> str:
        return self.con.kind

    # -- schema --------------------------------------------------------------
    def version(self) -> int:
        if not self.con.table_exists("inferx_schema"):
            return 0
        rows = self.con.query("SELECT version FROM inferx_schema")
        return int(rows[0][0]) if rows else 0

    def migrate(self, target: int = SCHEMA_VERSION) -> tuple[int, int]:
        """Apply the migrations after the current version up to ``target``; (from, to)."""
        start = self.version()
        if start > SCHEMA_VERSION:
            raise UserFacingError(
                f"{describe_url(self.url)} is at results schema {start}; this InferX knows "
                f"up to {SCHEMA_VERSION}: upgrade InferX"
            )
        if start >= target:
            return start, start
        if start == 0:
            self._refuse_foreign_tables()
        with self.con.transaction():
            for number in range(start + 1, target + 1):
                for statement in MIGRATIONS[number - 1]:
                    self.con.execute(statement)
                self.con.execute("UPDATE inferx_schema SET version = ?", [number])
        return start, target

    def _refuse_foreign_tables(self) -> None:
        """A database InferX never set up but holding tables of its names: someone else's."""
        taken = [name for name in OWN_TABLES if self.con.table_exists(name)]
        if taken:
            raise UserFacingError(
                f"{describe_url(self.url)} already has table(s) {', '.join(taken)} that InferX "
                "did not create (no inferx_schema table): give --db a database of InferX's own, "
                "e.g. a new file"
            )

    # -- ingest --------------------------------------------------------------
    def _existing(self, hashes: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(hashes), _CHUNK):
            chunk = list(hashes[i : i + _CHUNK])
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT content_hash FROM points WHERE content_hash IN ({marks})"
            found.update(r[0] for r in self.con.query(sql, chunk))
        return found

    def _store(self, rows: Sequence[PointRow], hashes: Sequence[str], label: str | None) -> None:
        """Insert ``rows``, label every hash in ``hashes`` (in one transaction)."""
        now = utc_now()
        with self.con.transaction():
            self.con.insert_many(
                "points",
                _INSERT_COLUMNS,
                [(r.content_hash, *r.values, r.power_valid, now, r.result_json) for r in rows],
                "content_hash",  # a concurrent ingest of the same point stores it once
            )
            if label:
                self.con.insert_many(
                    "point_labels",
                    ("content_hash", "label", "ingested_at"),
                    [(h, label, now) for h in hashes],
                    "content_hash, label",
                )

    def ingest(
        self,
        results: Iterable[PointResultBase],
        label: str | None = None,
        paths: Mapping[int, str] | None = None,
    ) -> IngestReport:
        """Store typed results (idempotent by content); ``paths``: index -> source file.

        Results already stored are recognised by their hash alone, before any row is
        built, so a re-ingest costs the reading and hashing only.
        """
        listed = list(results)
        first: dict[str, int] = {}  # hash -> index of its first occurrence
        for i, result in enumerate(listed):
            first.setdefault(content_hash(result), i)
        existing = self._existing(list(first))
        fresh = [i for h, i in first.items() if h not in existing]
        sources = {j: paths[i] for j, i in enumerate(fresh) if paths and i in paths}
        rows = point_rows([listed[i] for i in fresh], sources)
        self._store(rows, list(first), label)
        return IngestReport(
            stored=[r.point_id for r in rows],
            already=[listed[i].point_id for h, i in first.items() if h in existing],
            labelled=len(first) if label else 0,
        )

    # -- queries -------------------------------------------------------------
    def labels_of(self, filters: Filters) -> dict[str, list[str]]:
        where, params = filters.where("p")
        rows = self.con.query(
            "SELECT l.content_hash, l.label FROM point_labels l "
            f"JOIN points p ON p.content_hash = l.content_hash WHERE {where} "
            "ORDER BY l.ingested_at, l.label",
            params,
        )
        out: dict[str, list[str]] = {}
        for digest, label in rows:
            out.setdefault(digest, []).append(label)
        return out

    def points(self, filters: Filters | None = None, *, with_json: bool = False) -> list[Any]:
        """The matching points, oldest first: dict rows, or :class:`StoredResult` with JSON."""
        filters = filters or Filters()
        where, params = filters.where("p")
        columns = ["content_hash", *INDEX_COLUMNS, "power_valid", "ingested_at"]
        select = ", ".join(f"p.{c}" for c in columns) + (", p.result_json" if with_json else "")
        rows = self.con.query(
            f"SELECT {select} FROM points p WHERE {where} ORDER BY p.date, p.point_id", params
        )
        labels = self.labels_of(filters)
        out: list[Any] = []
        for values in rows:
            row = dict(zip(columns, values[: len(columns)], strict=True))
            row["labels"] = labels.get(row["content_hash"], [])
            if with_json:
                out.append(StoredResult(row, tuple(row["labels"]), values[-1]))
            else:
                out.append(row)
        return out

    def label_summary(self) -> list[dict[str, Any]]:
        """Each label with its point count and date range."""
        rows = self.con.query(
            "SELECT l.label, COUNT(*), MIN(p.date), MAX(p.date) FROM point_labels l "
            "JOIN points p ON p.content_hash = l.content_hash GROUP BY l.label ORDER BY l.label"
        )
        return [{"label": r[0], "points": int(r[1]), "first": r[2], "last": r[3]} for r in rows]

    def count(self) -> int:
        return int(self.con.query("SELECT COUNT(*) FROM points")[0][0])


def open_db(url: str | None = None, *, migrate: bool = True) -> ResultsDB:
    """The database ``url`` names (or ``INFERX_DB``, or the default file), schema up to date."""
    resolved = resolve_url(url)
    db = ResultsDB(connect(resolved), resolved)
    if migrate:
        try:
            db.migrate()
        except BaseException:
            db.close()
            raise
    return db
