"""The results database's tables and their migrations (the same SQL on DuckDB and PostgreSQL).

Tables:

- ``inferx_schema``: one row, the schema version the database is at;
- ``points``: one row per distinct result, keyed by ``content_hash`` (sha256 of
  the result's canonical JSON), with the columns filters and charts use
  (engine, version, model, hardware, precision, ISL/OSL, load level, the main
  figures) and the whole result as JSON (``result_json``: read back through
  the typed model, so nothing is lost);
- ``point_labels``: which labels (a nightly's date, a branch, "baseline") a
  point was ingested under; the same point under two labels is stored once.

Each migration is a list of statements; a database at version N gets the
migrations after N, in one transaction, and its version row is raised.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["INDEX_COLUMNS", "METRIC_COLUMNS", "MIGRATIONS", "SCHEMA_VERSION", "TEXT_COLUMNS"]

#: Describing columns (filters, grouping) and their SQL types.
TEXT_COLUMNS: tuple[str, ...] = (
    "point_id",
    "series",
    "status",
    "failure_reason",
    "date",
    "engine",
    "engine_version",
    "model",
    "hardware",
    "gpu_type",
    "precision",
    "scenario",
    "api",
    "mode",
    "source",
    "source_path",
)
INT_COLUMNS: tuple[str, ...] = ("isl", "osl", "concurrency", "tp", "pp", "dp", "ep", "num_gpus")
FLOAT_COLUMNS: tuple[str, ...] = ("request_rate",)
#: Migration 3: reasoning models and speculative decoding (NULL for other points).
ADDED_METRIC_COLUMNS: tuple[str, ...] = (
    "median_ttfo_ms",
    "p99_ttfo_ms",
    "median_tpot_answer_ms",
    "total_reasoning_tokens",
    "spec_acceptance_rate",
    "spec_mean_acceptance_length",
)
#: The figures kept as columns (flat/report names); everything else is in result_json.
METRIC_COLUMNS: tuple[str, ...] = (
    "tput_per_gpu",
    "output_tput_per_gpu",
    "median_intvty",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "completed",
    "failed",
    "usd_per_gpu_hour",
    "cost_per_mtok_total",
    "gpu_power_avg_w",
    *ADDED_METRIC_COLUMNS,
)
INDEX_COLUMNS: tuple[str, ...] = (*TEXT_COLUMNS, *INT_COLUMNS, *FLOAT_COLUMNS, *METRIC_COLUMNS)


def _points_table() -> str:
    """The table as the first migration made it (later columns come with their migration)."""
    first = [c for c in METRIC_COLUMNS if c not in ADDED_METRIC_COLUMNS]
    cols = ["content_hash TEXT PRIMARY KEY"]
    cols += [f"{c} TEXT" for c in TEXT_COLUMNS]
    cols += [f"{c} BIGINT" for c in INT_COLUMNS]
    cols += [f"{c} DOUBLE PRECISION" for c in (*FLOAT_COLUMNS, *first)]
    cols += ["power_valid BOOLEAN", "ingested_at TEXT NOT NULL", "result_json TEXT NOT NULL"]
    return "CREATE TABLE points (\n  " + ",\n  ".join(cols) + "\n)"


#: Migration i (1-based) brings a database from version i-1 to i.
MIGRATIONS: tuple[Sequence[str], ...] = (
    (
        "CREATE TABLE inferx_schema (version INTEGER NOT NULL)",
        "INSERT INTO inferx_schema (version) VALUES (0)",
        _points_table(),
        "CREATE TABLE point_labels (content_hash TEXT NOT NULL, label TEXT NOT NULL, "
        "ingested_at TEXT NOT NULL, PRIMARY KEY (content_hash, label))",
    ),
    (
        # Lookups by point (history, regress matching) and by label (every query filters on it).
        "CREATE INDEX points_point_id ON points (point_id)",
        "CREATE INDEX point_labels_label ON point_labels (label)",
    ),
    # Reasoning and speculative figures as columns (filters, charts); they were only in
    # result_json before.
    tuple(f"ALTER TABLE points ADD COLUMN {c} DOUBLE PRECISION" for c in ADDED_METRIC_COLUMNS),
)
SCHEMA_VERSION = len(MIGRATIONS)
#: The tables the first migration creates: a database without inferx_schema must have none.
OWN_TABLES = ("inferx_schema", "points", "point_labels")
