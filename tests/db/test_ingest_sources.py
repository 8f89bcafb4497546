"""Points reach the database from ``inferx bench --db`` as they finish, and from vLLM and
InferenceX files (``inferx db ingest``), against the scripted SSE server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from inferx_core.cli import main
from inferx_core.db.store import Filters, open_db
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="module")
def server():
    # 10 ms between chunks: a client starved by other jobs on 2 cores still reads them apart
    # (chunks read together make a point "invalid", which these tests are not about)
    with ServerProcess(ttft_ms=10, itl_ms=10) as s:
        yield s


def _bench(server: ServerProcess, output: Path, *extra: str) -> int:
    argv = ["bench", "--base-url", server.base_url, "--concurrency", "1,2", "--isl", "16"]
    argv += ["--osl", "6", "--num-prompts", "4", "--output", str(output), "--no-progress"]
    return main([*argv, *extra])


def test_bench_db_stores_each_point_as_it_finishes(server, db_url, tmp_path, capsys) -> None:
    seen: list[int] = []
    import inferx_core.db.ingest as ingest

    real = ingest.PointIngester.__call__

    def spy(self, outcome):  # the count in the database right after each point
        real(self, outcome)
        with open_db(self.url) as db:
            seen.append(db.count())

    ingest.PointIngester.__call__ = spy
    try:
        code = _bench(server, tmp_path / "out", f"--db={db_url}", "--db-label", "nightly")
    finally:
        ingest.PointIngester.__call__ = real
    assert seen == [1, 2]
    with open_db(db_url) as db:
        rows = db.points(Filters(label=["nightly"]))
    assert [r["concurrency"] for r in rows] == [1, 2]
    # ok, or "invalid" when a validity check failed on a loaded machine: stored either way
    assert all(r["status"] in ("ok", "invalid") and r["tput_per_gpu"] > 0 for r in rows)
    assert code == (0 if all(r["status"] == "ok" for r in rows) else 1)
    assert {Path(r["source_path"]).parent for r in rows} == {tmp_path / "out"}
    # ingesting the same folder afterwards adds nothing: the content is already there
    assert main(["db", "ingest", str(tmp_path / "out"), "--db", db_url, "--label", "nightly"]) == 0
    assert "0 point(s) stored, 2 already stored" in capsys.readouterr().out


def test_bench_with_an_unreachable_db_fails_before_any_load(server, tmp_path, capsys) -> None:
    pytest.importorskip("psycopg")
    code = _bench(server, tmp_path / "out", "--db=postgresql://x@127.0.0.1:1/none")
    assert code == 2 and "cannot connect" in capsys.readouterr().err
    assert not list((tmp_path / "out").glob("*.json"))


def test_vllm_and_inferencex_files_are_ingested_once(server, db_url, tmp_path, capsys) -> None:
    assert _bench(server, tmp_path / "results") == 0
    argv = ["export", str(tmp_path / "results"), "--format", "vllm,inferencex"]
    argv += ["--output", str(tmp_path / "export"), "--set", "hw=h200", "--set", "precision=fp8"]
    assert main([*argv, "--set", "framework=vllm", "--set", "tp=1"]) == 0
    files = tmp_path / "files"  # the field's own files, as another pipeline leaves them
    files.mkdir()
    for path in (tmp_path / "export").glob("*.json"):
        if not path.name.startswith("power_"):
            shutil.copy(path, files / path.name)
    (files / "notes.json").write_text(json.dumps({"hello": "world"}))  # e.g. a config
    capsys.readouterr()
    assert main(["db", "ingest", str(files), "--db", db_url, "--label", "field"]) == 0
    captured = capsys.readouterr()
    assert "4 point(s) stored" in captured.out  # 2 vLLM files + 2 aggregates
    assert "1 other JSON file(s) ignored (notes.json)" in captured.out
    assert captured.err == ""
    with open_db(db_url) as db:
        rows = db.points()
    sources = sorted(r["source"] for r in rows)
    assert sources == ["InferenceX aggregate"] * 2 + ["vllm bench serve"] * 2
    agg = [r for r in rows if r["source"] == "InferenceX aggregate"]
    assert {r["hardware"] for r in agg} == {"H200"} and all(r["tput_per_gpu"] for r in agg)
    # the same files from another folder are the same points (content, not path)
    copy = tmp_path / "copy"
    shutil.copytree(files, copy)
    assert main(["db", "ingest", str(copy), "--db", db_url]) == 0
    assert "0 point(s) stored, 4 already stored" in capsys.readouterr().out


def test_a_broken_file_is_skipped_with_its_reason(db_url, tmp_path, capsys) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "torn.json").write_text('{"mean_ttft_ms": 1')  # a killed writer
    assert main(["db", "ingest", str(folder), "--db", db_url]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "torn.json" in captured.err
    assert "0 point(s) stored" in captured.out


def test_run_db_stores_each_point_and_keeps_the_export(db_url, tmp_path) -> None:
    """``inferx run --db ... --export csv``: the database callback chains the exporter."""
    import fake_engine

    from inferx_core.cli.app import build_parser
    from inferx_core.cli.db import db_ingester
    from inferx_core.cli.interop import point_exporter
    from inferx_core.config.models import RunConfig
    from inferx_core.pipeline.server.run import run_configs
    from inferx_core.sdk.manager import get_plugin_manager
    from inferx_core.sdk.platform import Platform

    config = RunConfig.model_validate(
        {"engine": "fake", "model": "org/tiny-model",
         "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 10}, "readiness_timeout_s": 30,
         "workload": {"isl": 16, "osl": 4}, "load": {"concurrency": [1, 2], "num_prompts": 4}}
    )  # fmt: skip
    argv = ["run", "x.yaml", f"--db={db_url}", "--db-label", "nightly-7", "--export", "csv"]
    args = build_parser().parse_args(argv)
    on_point = db_ingester(args, point_exporter(args, tmp_path))
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    summary = run_configs(
        [config], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False, on_point=on_point
    )
    assert len(summary.outcomes) == 2 and not on_point.errors
    assert (tmp_path / "export" / "points.csv").is_file()  # the exporter still ran
    with open_db(db_url) as db:
        rows = db.points(Filters(label=["nightly-7"], engine=["fake"]))
    assert sorted(r["point_id"] for r in rows) == sorted(o.point_id for o in summary.outcomes)


def test_a_database_gone_during_a_run_is_reported_and_the_run_goes_on(tmp_path, capsys) -> None:
    from result_factory import make_model

    from inferx_core.db.ingest import PointIngester

    class Outcome:
        result = make_model("h200-tp1-c4")
        path = None

    calls: list[str] = []
    url = str(tmp_path / "results.duckdb")
    ingester = PointIngester(url, "n1", then=lambda o: calls.append(o.result.point_id))
    ingester(Outcome())
    assert ingester.report.stored == ["h200-tp1-c4"] and not ingester.errors
    (tmp_path / "results.duckdb").unlink()
    (tmp_path / "results.duckdb").mkdir()  # the file replaced by something DuckDB cannot open
    ingester(Outcome())  # no exception: the point's file is on disk, the run continues
    assert calls == ["h200-tp1-c4", "h200-tp1-c4"]  # the chained exporter ran both times
    [error] = ingester.errors
    assert error.startswith("h200-tp1-c4: not stored in the database")
    assert "inferx db ingest" in capsys.readouterr().err


def test_regress_uses_the_request_sidecars_still_on_disk(server, tmp_path, capsys) -> None:
    db = str(tmp_path / "x.duckdb")
    for label in ("a", "b"):
        assert _bench(server, tmp_path / label) in (0, 1)  # 1: a point made invalid by load
        assert main(["db", "ingest", str(tmp_path / label), "--db", db, "--label", label]) == 0
    capsys.readouterr()
    argv = ["db", "regress", "--db", db, "--baseline", "a", "--candidate", "b"]
    main([*argv, "--metric", "median_ttft_ms", "--json"])
    data = json.loads(capsys.readouterr().out)
    judged = [m for p in data["points"] for m in p["metrics"] if m["a"] and m["b"]]  # ok points
    estimates = [m[side] for m in judged for side in ("a", "b")]
    assert estimates and all(
        e["basis"] == "median CI from requests (order statistics)" for e in estimates
    ), estimates
    # without the files, the normal approximation from std and the request count
    for label in ("a", "b"):
        shutil.rmtree(tmp_path / label)
    main([*argv, "--metric", "median_ttft_ms", "--json"])
    data = json.loads(capsys.readouterr().out)
    judged = [m for p in data["points"] for m in p["metrics"] if m["a"] and m["b"]]
    bases = {m[side]["basis"] for m in judged for side in ("a", "b")}
    assert bases == {"median CI from std/sqrt(n) (normal approximation)"}
