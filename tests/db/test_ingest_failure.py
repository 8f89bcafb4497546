"""``inferx db ingest`` that fails (a full disk) leaves nothing it created behind: no 0-byte
database file, no WAL, no folder (issue 39, the reliability suite).

The full disk is a file-size limit on the ingesting process (RLIMIT_FSIZE, SIGXFSZ ignored,
so a write past it fails with EFBIG as a write to a full disk fails with ENOSPC)."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from inferx_core.errors import UserFacingError

DATA = Path(__file__).parents[1] / "report" / "data" / "vllm-cpu"


def ingest(db: Path, max_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        assert max_file_bytes is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "db", "ingest", str(DATA), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=small_disk if max_file_bytes is not None else None,
    )


def test_a_failed_ingest_leaves_no_database_file_or_folder(tmp_path: Path) -> None:
    db = tmp_path / "new-folder" / "results.duckdb"
    done = ingest(db, max_file_bytes=8192)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert str(db) in done.stderr and "File too large" in done.stderr  # the disk's own word
    assert not (tmp_path / "new-folder").exists(), list(tmp_path.rglob("*"))


def test_the_same_ingest_with_room_stores_the_point(tmp_path: Path) -> None:
    db = tmp_path / "new-folder" / "results.duckdb"
    done = ingest(db)
    assert done.returncode == 0, done.stderr
    assert "1 point(s) stored" in done.stdout and db.stat().st_size > 0


def test_a_write_that_fails_mid_ingest_removes_what_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inferx_core.db import store
    from inferx_core.db.ingest import ingest_into

    def disk_full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.ResultsDB, "ingest", disk_full)
    db = tmp_path / "made" / "results.duckdb"
    with pytest.raises(UserFacingError, match=r"No space left on device.*nothing was stored"):
        ingest_into(str(db), [DATA], None)
    assert not (tmp_path / "made").exists()
    kept = tmp_path / "kept.duckdb"  # a database that was there before is never removed
    monkeypatch.undo()
    ingest_into(str(kept), [DATA], None)
    monkeypatch.setattr(store.ResultsDB, "ingest", disk_full)
    with pytest.raises(UserFacingError, match="rolled back"):
        ingest_into(str(kept), [DATA], "again")
    assert kept.is_file()


def test_a_failed_ingest_into_a_database_of_before_leaves_it_as_it_was(tmp_path: Path) -> None:
    """The database existed; the new point's commit cannot write its WAL (the disk is
    full). DuckDB truncates the WAL it opened back to 0 bytes: that empty file was left
    beside the database. Now the database is byte for byte as it was, with no WAL."""
    import hashlib

    db = tmp_path / "results.duckdb"
    first = ingest(db)
    assert first.returncode == 0, first.stderr
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb"]
    other = Path(__file__).parents[1] / "interop" / "fixtures" / "inferx"
    argv = [sys.executable, "-m", "inferx_core.cli", "db", "ingest", str(other), "--db", str(db)]

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=small_disk)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"db ingest into {db} failed" in done.stderr and "File too large" in done.stderr
    assert "nothing was stored" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.duckdb"]  # no stray .wal
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300)  # room again
    assert again.returncode == 0 and "1 point(s) stored" in again.stdout, again.stderr
