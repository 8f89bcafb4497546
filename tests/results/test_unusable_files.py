"""Result files with NaN, Infinity or nesting thousands deep: every reader skips them with
the reason (report, compare, export, db ingest, dashboard, resume), ``import`` refuses
them naming the file; the good points beside them are still read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from result_factory import make_result, write_results

from inferx_core.cli.app import main
from inferx_core.results.files import is_complete
from inferx_core.results.read import MAX_SIDECAR_LINE, load_results, read_jsonl

GOOD = "h200-tp1-c16"


def _result_text(point_id: str, figure: str) -> str:
    """A schema-1 result whose throughput is the JSON text ``figure``."""
    data = make_result(point_id, tput_per_gpu=1234.5)
    text = json.dumps(data)
    assert text.count("1234.5") >= 1
    return text.replace("1234.5", figure)


def _deep(point_id: str, depth: int) -> str:
    data = make_result(point_id)
    return json.dumps(data)[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"


#: file name -> (text, the reason every reader gives)
BAD = {
    "nan.json": (_result_text("nan-point", "NaN"), "NaN is not a number JSON allows"),
    "inf.json": (_result_text("inf-point", "-Infinity"), "-Infinity is not a number JSON allows"),
    "overflow.json": (_result_text("overflow-point", "1e999"), "overflows to infinity"),
    "deep.json": (_deep("deep-point", 100_000), "nested more than 64 levels deep"),
    "deep200.json": (_deep("deep200-point", 200), "nested more than 64 levels deep"),
    "digits.json": (_result_text("digits-point", "9" * 5000), "digits (at most 40)"),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a folder of one good point, a folder of the same point and every bad file)."""
    good = tmp_path_factory.mktemp("good")
    mixed = tmp_path_factory.mktemp("mixed")
    for folder in (good, mixed):
        write_results(folder, [make_result(GOOD, tput_per_gpu=1000.0)])
    for name, (text, _) in BAD.items():
        (mixed / name).write_text(text)
    return good, mixed


def assert_each_bad_file_named_with_its_reason(output: str, folder: Path) -> None:
    assert "Traceback" not in output
    flat = " ".join(output.split())  # rich may wrap a long line
    for name, (_, reason) in BAD.items():
        at = flat.find(str(folder / name))
        assert at >= 0 and reason in flat[at : at + 300], (name, output)


def test_load_results_skips_each_with_its_reason(folders: tuple[Path, Path]) -> None:
    _, mixed = folders
    loaded = load_results([mixed])
    assert [r.point_id for r in loaded.results] == [GOOD]
    reasons = {p.name: why for p, why in loaded.unusable}
    assert set(reasons) == set(BAD)
    for name, (_, reason) in BAD.items():
        assert reason in reasons[name]
        assert any(name in w and reason in w for w in loaded.warnings)


def test_report(folders: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    _, mixed = folders
    assert main(["report", str(mixed), "--output", str(tmp_path), "--no-plots"]) == 0
    out = capsys.readouterr()
    assert_each_bad_file_named_with_its_reason(out.out + out.err, mixed)
    assert GOOD in (tmp_path / "points.csv").read_text()


def test_compare(folders: tuple[Path, Path], capsys) -> None:
    good, mixed = folders
    assert main(["compare", str(good), str(mixed)]) == 0
    out = capsys.readouterr()
    assert_each_bad_file_named_with_its_reason(out.out + out.err, mixed)
    assert GOOD in out.out


def test_export(folders: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    _, mixed = folders
    code = main(["export", str(mixed), "--format", "csv", "--output", str(tmp_path / "x")])
    out = capsys.readouterr()
    assert code == 1, out.err  # as when a point cannot be exported: something was left out
    assert_each_bad_file_named_with_its_reason(out.err, mixed)
    rows = (tmp_path / "x" / "points.csv").read_text().splitlines()
    assert len(rows) == 2 and GOOD in rows[1]


def test_db_ingest(folders: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    _, mixed = folders
    db = f"duckdb:///{tmp_path / 'r.duckdb'}"
    assert main(["db", "ingest", str(mixed), "--db", db]) == 0
    out = capsys.readouterr()
    assert_each_bad_file_named_with_its_reason(out.err, mixed)
    assert "1 point(s) stored" in out.out


def test_dashboard(folders: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    _, mixed = folders
    assert main(["dashboard", str(mixed), "--output", str(tmp_path / "d")]) == 0
    out = capsys.readouterr()
    assert_each_bad_file_named_with_its_reason(out.err, mixed)
    assert "(1 point(s))" in out.out


@pytest.mark.parametrize("name", sorted(BAD))
def test_import_refuses_the_file_naming_it(
    folders: tuple[Path, Path], tmp_path: Path, capsys, name: str
) -> None:
    _, mixed = folders
    assert main(["import", str(mixed / name), "--output", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{mixed / name}: not a usable JSON file: " in err and BAD[name][1] in err


@pytest.mark.parametrize("name", sorted(BAD))
def test_resume_runs_a_point_whose_file_is_unusable_again(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{GOOD}.json").write_text(BAD[name][0])
    assert is_complete(tmp_path, GOOD) is False


def test_sidecar_rows_that_are_unusable_are_dropped(tmp_path: Path) -> None:
    rows = [
        '{"request_id": 0, "x": 1}',
        '{"request_id": 1, "x": NaN}',
        '{"request_id": 2, "x": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"request_id": 3, "x": "' + "y" * (MAX_SIDECAR_LINE + 10) + '"}',
        '{"request_id": 4, "x": 1e999}',
        '{"request_id": 5, "x": 2}',
        '{"request_id": 6, "x"',  # torn by a killed writer
    ]
    path = tmp_path / "p.requests.jsonl"
    path.write_text("\n".join(rows))
    assert [r["request_id"] for r in read_jsonl(path)] == [0, 5]
