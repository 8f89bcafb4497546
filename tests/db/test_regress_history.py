"""``inferx db regress`` (verdicts, exit code, replicates as spread) and ``db history``."""

from __future__ import annotations

import json
from pathlib import Path

from result_factory import make_result, pixel_variety, write_results

from inferx_core.cli import main


def _ingest(db_url: str, folder: Path, label: str, points: list[dict]) -> None:
    write_results(folder, points)
    assert main(["db", "ingest", str(folder), "--db", db_url, "--label", label]) == 0


def _nightly(date: str, c16: float, **kwargs) -> list[dict]:
    return [
        make_result("h200-tp1-c4", tput_per_gpu=500.0, concurrency=4, date=date),
        make_result("h200-tp1-c16", tput_per_gpu=c16, concurrency=16, date=date, **kwargs),
        make_result("h200-tp1-c64", tput_per_gpu=2000.0, concurrency=64, date=date),
    ]


def test_a_throughput_drop_beyond_the_noise_fails_the_gate(db_url, tmp_path, capsys) -> None:
    _ingest(db_url, tmp_path / "n1", "n1", _nightly("2026-12-01T00:00:00+00:00", 1200.0))
    _ingest(db_url, tmp_path / "n2", "n2", _nightly("2026-12-02T00:00:00+00:00", 960.0))
    capsys.readouterr()
    argv = ["db", "regress", "--db", db_url, "--baseline", "n1", "--candidate", "n2"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "WORSE   h200-tp1-c16: tok/s/gpu -20.0% worse" in out
    assert "SAME    h200-tp1-c4" in out and "SAME    h200-tp1-c64" in out
    assert "REGRESSION h200-tp1-c16: tok/s/gpu -20.0% (noise floor)" in out
    assert "REGRESSION h200-tp1-c16: out tok/s -20.0% (noise floor)" in out
    assert "2 regression(s) beyond the spread" in out
    # judged on TTFT only, nothing regressed
    assert main([*argv, "--metric", "median_ttft_ms"]) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    [worse] = [p for p in data["points"] if p["verdict"] == "worse"]
    assert worse["baseline_point"] == worse["candidate_point"] == "h200-tp1-c16"
    [m] = [m for m in worse["metrics"] if m["field"] == "tput_per_gpu"]
    assert abs(m["change"] + 0.2) < 1e-12
    assert m["basis"] == "noise floor"  # one run each: no CI on throughput


def test_an_improvement_and_an_unchanged_rerun_pass(db_url, tmp_path, capsys) -> None:
    _ingest(db_url, tmp_path / "n1", "n1", _nightly("2026-12-01T00:00:00+00:00", 1200.0))
    _ingest(db_url, tmp_path / "n2", "n2", _nightly("2026-12-02T00:00:00+00:00", 1500.0))
    _ingest(db_url, tmp_path / "n3", "n3", _nightly("2026-12-03T00:00:00+00:00", 1200.0))
    argv = ["db", "regress", "--db", db_url, "--baseline", "n1"]
    assert main([*argv, "--candidate", "n2"]) == 0
    assert "BETTER  h200-tp1-c16: tok/s/gpu +25.0% better" in capsys.readouterr().out
    assert main([*argv, "--candidate", "n3"]) == 0
    assert "0 regression(s)" in capsys.readouterr().out


def test_replicates_give_the_spread(db_url, tmp_path, capsys) -> None:
    """-8% is past the 5% noise floor, but three noisy repeats per side overlap: same."""
    for i, tput in enumerate((1000.0, 1200.0, 1400.0)):
        _ingest(db_url, tmp_path / f"a{i}", "base", _nightly(f"2026-12-01T0{i}:00:00+00:00", tput))
    for i, tput in enumerate((900.0, 1100.0, 1300.0)):
        _ingest(db_url, tmp_path / f"b{i}", "cand", _nightly(f"2026-12-02T0{i}:00:00+00:00", tput))
    capsys.readouterr()
    argv = ["db", "regress", "--db", db_url, "--baseline", "base", "--candidate", "cand"]
    assert main([*argv, "--metric", "tput_per_gpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [c16] = [p for p in data["points"] if p["label"] == "h200-tp1-c16"]
    [m] = c16["metrics"]
    assert m["verdict"] == "same" and m["basis"] == "CIs overlap"
    assert m["a"]["basis"] == "replicates (n=3)" and m["a"]["value"] == 1200.0
    assert m["b"]["value"] == 1100.0


def test_regress_without_matches_or_labels_is_an_error(db_url, tmp_path, capsys) -> None:
    _ingest(db_url, tmp_path / "n1", "n1", _nightly("2026-12-01T00:00:00+00:00", 1200.0))
    argv = ["db", "regress", "--db", db_url, "--baseline", "n1", "--candidate", "nope"]
    assert main(argv) == 2
    assert "no points under label 'nope'" in capsys.readouterr().err


def test_history_of_one_configuration(db_url, tmp_path, capsys) -> None:
    for day, version, tput in ((1, "0.30", 1000.0), (2, "0.31", 1100.0), (3, "0.32", 1250.0)):
        points = _nightly(f"2026-12-0{day}T00:00:00+00:00", tput)
        for p in points:
            p["engine"]["version"] = version
        _ingest(db_url, tmp_path / f"n{day}", f"nightly-{day}", points)
    capsys.readouterr()
    png = tmp_path / "history.png"
    argv = ["db", "history", "--db", db_url, "--metric", "tput_per_gpu", "--point", "h200-tp1-c16"]
    assert main([*argv, "--output", str(png)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split("\t") == ["date", "point_id", "engine", "version", "labels",
                                    "tput_per_gpu"]  # fmt: skip
    rows = [line.split("\t") for line in lines[1:4]]
    assert [(r[3], r[4], r[5]) for r in rows] == [
        ("0.30", "nightly-1", "1000"), ("0.31", "nightly-2", "1100"), ("0.32", "nightly-3", "1250")
    ]  # fmt: skip
    colours, non_white = pixel_variety(png)
    assert colours > 50 and non_white > 0.02
    # a figure that is not a column comes from the stored result
    assert main([*argv, "--metric", "std_ttft_ms", "--json"]) == 0
    assert [r["value"] for r in json.loads(capsys.readouterr().out)] == [10.0, 10.0, 10.0]
    # too many configurations to draw is an error that says how to narrow
    assert main(["db", "history", "--db", db_url, "--metric", "tput_per_gpu"]) == 0
    many = [make_result(f"x-c{i}", concurrency=i) for i in range(1, 15)]
    _ingest(db_url, tmp_path / "many", "many", many)
    assert main(["db", "history", "--db", db_url, "--metric", "tput_per_gpu"]) == 2
    assert "narrow to at most 12" in capsys.readouterr().err
