"""The results database on DuckDB and on a real PostgreSQL server: schema, migration,
content-addressed ingest, filters (every test runs once per backend)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from result_factory import make_result, make_set, write_results

from inferx_core.cli import main
from inferx_core.db.backends import connect, resolve_url
from inferx_core.db.schema import ADDED_METRIC_COLUMNS, INDEX_COLUMNS, SCHEMA_VERSION
from inferx_core.db.store import Filters, ResultsDB, open_db
from inferx_core.errors import UserFacingError


def test_schema_is_created_and_reopening_changes_nothing(db_url: str) -> None:
    with open_db(db_url) as db:
        assert db.version() == SCHEMA_VERSION
        assert db.count() == 0
        assert db.migrate() == (SCHEMA_VERSION, SCHEMA_VERSION)
    with open_db(db_url) as db:
        assert db.version() == SCHEMA_VERSION


def test_an_old_schema_is_migrated_with_its_data(db_url: str, tmp_path: Path) -> None:
    """A database the first release made, with its points stored in its columns, gets the
    later migrations (indexes, the reasoning and speculative columns) and keeps its rows."""
    from inferx_core.db.records import point_rows
    from inferx_core.results.read import load_results

    old = ResultsDB(connect(db_url), db_url)
    assert old.migrate(target=1) == (0, 1)  # what the first release created
    rows = point_rows(load_results([make_set(tmp_path / "r")]).results)
    first = [c for c in INDEX_COLUMNS if c not in ADDED_METRIC_COLUMNS]
    at = [INDEX_COLUMNS.index(c) for c in first]
    stamp = "2026-01-01T00:00:00+00:00"
    old.con.insert_many(
        "points",
        ("content_hash", *first, "power_valid", "ingested_at", "result_json"),
        [(r.content_hash, *(r.values[i] for i in at), r.power_valid, stamp, r.result_json)
         for r in rows],
        "content_hash",
    )  # fmt: skip
    old.con.insert_many(
        "point_labels",
        ("content_hash", "label", "ingested_at"),
        [(r.content_hash, "v1", stamp) for r in rows],
        "content_hash, label",
    )
    old.close()
    with open_db(db_url) as db:  # opening migrates to the current version
        assert db.version() == SCHEMA_VERSION
        assert db.count() == 6
        assert {r["label"] for r in db.label_summary()} == {"v1"}
        assert all(p["median_ttfo_ms"] is None for p in db.points())


def test_a_newer_schema_is_refused(db_url: str) -> None:
    with open_db(db_url) as db:
        db.con.execute("UPDATE inferx_schema SET version = ?", [SCHEMA_VERSION + 1])
    with pytest.raises(UserFacingError, match="upgrade InferX"):
        open_db(db_url)


def test_a_database_with_someone_elses_points_table_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "theirs.duckdb")
    con = connect(resolve_url(url))
    con.execute("CREATE TABLE points (x INTEGER)")
    con.close()
    with pytest.raises(UserFacingError, match="points that InferX did not create"):
        open_db(url)
    assert main(["db", "list", "--db", url]) == 2  # one line, no traceback
    assert "did not create" in capsys.readouterr().err


def test_ingest_is_idempotent_by_content(db_url: str, tmp_path: Path, capsys) -> None:
    folder = make_set(tmp_path / "run")
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert main(["db", "ingest", str(folder), "--db", db_url, "--label", "a"]) == 0
    assert "6 point(s) stored, 0 already stored" in capsys.readouterr().out
    # the same folder again, a copy of it, and both at once: nothing new
    assert main(["db", "ingest", str(folder), str(copy), "--db", db_url, "--label", "a"]) == 0
    assert "0 point(s) stored, 6 already stored" in capsys.readouterr().out
    # a second label on the same points stores no point, only the label
    assert main(["db", "ingest", str(copy), "--db", db_url, "--label", "b"]) == 0
    with open_db(db_url) as db:
        assert db.count() == 6
        assert [(r["label"], r["points"]) for r in db.label_summary()] == [("a", 6), ("b", 6)]
        assert all(r["labels"] == ["a", "b"] for r in db.points())
    # a re-run of one point (new date, new figures) is a new version, kept beside the old
    rerun = make_result("h200-tp1-c16", tput_per_gpu=1100.0, date="2026-01-02T00:00:00+00:00")
    write_results(tmp_path / "rerun", [rerun])
    assert main(["db", "ingest", str(tmp_path / "rerun"), "--db", db_url]) == 0
    with open_db(db_url) as db:
        versions = db.points(Filters(point_id=["h200-tp1-c16"]))
        assert [v["tput_per_gpu"] for v in versions] == [1200.0, 1100.0]  # oldest first
        assert versions[1]["labels"] == []


def test_stored_points_keep_their_description_and_whole_result(db_url, tmp_path) -> None:
    folder = make_set(tmp_path / "r")
    with open_db(db_url) as db:
        from inferx_core.db.ingest import ingest_paths

        ingest_paths(db, [folder], "a")
        [item] = db.points(Filters(point_id=["mi300x-tp1-c16"]), with_json=True)
    row = item.row
    assert (row["hardware"], row["engine"], row["engine_version"]) == ("MI300X", "vllm", "1.0")
    assert (row["isl"], row["osl"], row["concurrency"], row["tp"]) == (1024, 1024, 16, 1)
    assert row["tput_per_gpu"] == 1300.0 and row["median_intvty"] == 50.0
    assert row["power_valid"] is True and row["gpu_power_avg_w"] == 650.0
    assert row["source"] == "inferx" and row["source_path"].endswith("mi300x-tp1-c16.json")
    assert row["date"] == "2026-01-01T00:00:00+00:00"
    result = item.result  # the typed model back, every figure intact
    assert result.point_id == "mi300x-tp1-c16"
    assert result.metric("median_ttft_ms") == 100.0


def _seed(db_url: str, tmp_path: Path) -> None:
    points = [
        make_result("a-c1", engine="vllm", concurrency=1, isl=1024, osl=1024,
                    date="2026-12-01T01:00:00+00:00"),
        make_result("b-c1", engine="sglang", concurrency=1, isl=1024, osl=8192,
                    date="2026-12-02T01:00:00+00:00", quantization="fp8"),
        make_result("c-c1", engine="vllm", concurrency=1, gpu_name="AMD Instinct MI300X",
                    date="2026-12-03T01:00:00+02:00"),
        make_result("d-c1", status="failed", tput_per_gpu=None, median_intvty=None,
                    date="2026-12-03T05:00:00+00:00"),
    ]  # fmt: skip
    write_results(tmp_path / "one", points[:2])
    write_results(tmp_path / "two", points[2:])
    assert main(["db", "ingest", str(tmp_path / "one"), "--db", db_url, "--label", "n1"]) == 0
    assert main(["db", "ingest", str(tmp_path / "two"), "--db", db_url, "--label", "n2"]) == 0


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], ["a-c1", "b-c1", "c-c1", "d-c1"]),
        (["--engine", "sglang"], ["b-c1"]),
        (["--engine", "vllm,sglang", "--hardware", "h200"], ["a-c1", "b-c1", "d-c1"]),
        (["--hardware", "MI300X"], ["c-c1"]),
        (["--osl", "8192"], ["b-c1"]),
        (["--isl", "1024", "--osl", "1024"], ["a-c1", "c-c1", "d-c1"]),
        (["--precision", "fp8"], ["b-c1"]),
        (["--label", "n2"], ["c-c1", "d-c1"]),
        (["--status", "failed"], ["d-c1"]),
        (["--engine-version", "1.0", "--model", "Model-8B", "--label", "n1"], ["a-c1", "b-c1"]),
        # dates compare in UTC: c-c1 at 01:00+02:00 is 2026-12-02T23:00Z
        (["--since", "2026-12-02", "--until", "2026-12-02"], ["b-c1", "c-c1"]),
        (["--since", "2026-12-03T00:00:00+00:00"], ["d-c1"]),
    ],
)
def test_list_filters(db_url: str, tmp_path: Path, capsys, flags, expected) -> None:
    _seed(db_url, tmp_path)
    capsys.readouterr()
    assert main(["db", "list", "--db", db_url, "--json", *flags]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["point_id"] for r in rows) == expected


def test_list_table_and_labels(db_url: str, tmp_path: Path, capsys) -> None:
    _seed(db_url, tmp_path)
    capsys.readouterr()
    assert main(["db", "list", "--db", db_url, "--labels"]) == 0
    out = capsys.readouterr().out
    assert "n1\t2 point(s)" in out and "n2\t2 point(s)" in out
    assert main(["db", "list", "--db", db_url, "--engine", "sglang"]) == 0
    lines = capsys.readouterr().out.splitlines()  # piped: tab-separated, nothing cut
    assert lines[0] == "1 point(s)" and lines[1].split("\t")[:3] == ["date", "point_id", "status"]
    expected = ["2026-12-02T01:00:00+00:00", "b-c1", "ok", "H200", "sglang", "1.0", "fp8",
                "1024", "8192", "1", "1000", "50", "n1"]  # fmt: skip
    assert lines[2].split("\t") == expected


def test_database_location(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("INFERX_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert resolve_url(None) == str(tmp_path / "data" / "inferx" / "results.duckdb")
    monkeypatch.setenv("INFERX_DB", str(tmp_path / "env.duckdb"))
    assert resolve_url(None) == str(tmp_path / "env.duckdb")
    assert resolve_url("postgresql://u@h/db") == "postgresql://u@h/db"
    with open_db() as db:  # INFERX_DB
        assert db.kind == "duckdb"
    assert (tmp_path / "env.duckdb").is_file()


def test_unreachable_postgres_is_a_user_error(capsys) -> None:
    pytest.importorskip("psycopg")
    code = main(["db", "list", "--db", "postgresql://nobody:secret@127.0.0.1:1/none"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot connect to postgresql://***@127.0.0.1:1/none" in err
    assert "secret" not in err and "nobody" not in err  # the user of a URL is masked too
