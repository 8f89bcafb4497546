"""write_text_atomic: the report's CSV and HTML are complete or absent, written as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferx_core.results import files
from inferx_core.results.files import write_text_atomic


def test_text_is_written_as_given_and_no_temp_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "points.csv"
    assert write_text_atomic(path, "a,b\r\n1,2\r\n") == path
    assert path.read_bytes() == b"a,b\r\n1,2\r\n"  # csv's line endings kept, not translated
    assert [p.name for p in path.parent.iterdir()] == ["points.csv"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_text_atomic(path, "old\n")

    def fail(handle: object) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        files._atomic_write(path, fail)
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]
