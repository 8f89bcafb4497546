"""Loading results from several folders: recursion, sidecars skipped, dedupe, conflicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from result_factory import make_result, write_results

from inferx_core.results.read import load_results, read_jsonl, telemetry_sidecar


def test_reads_every_result_recursively_and_skips_the_rest(tmp_path: Path) -> None:
    write_results(tmp_path / "run1", [make_result("a-c1"), make_result("a-c8")])
    write_results(tmp_path / "run2" / "deep", [make_result("b-c1")])
    (tmp_path / "run1" / "a-c1.requests.jsonl").write_text('{"request_id": 0}\n')
    (tmp_path / "run1" / "a-c1.telemetry.jsonl").write_text('{"t_s": 0}\n')
    (tmp_path / "run1" / "sweep.json").write_text('{"base": {"engine": "vllm"}}')
    (tmp_path / "run1" / "broken.json").write_text('{"point_id": ')
    (tmp_path / "run1" / ".hidden").mkdir()
    write_results(tmp_path / "run1" / ".hidden", [make_result("hidden-c1")])
    loaded = load_results([tmp_path])
    assert [r.point_id for r in loaded.results] == ["a-c1", "a-c8", "b-c1"]
    assert loaded.paths["b-c1"] == tmp_path / "run2" / "deep" / "b-c1.json"
    skipped = {p.name: why for p, why in loaded.skipped}
    assert set(skipped) == {"sweep.json", "broken.json"}
    assert "not an InferX result" in skipped["sweep.json"]
    assert "invalid JSON" in skipped["broken.json"]
    assert loaded.conflicts == []
    assert telemetry_sidecar(loaded.paths["a-c1"]) == tmp_path / "run1" / "a-c1.telemetry.jsonl"
    assert telemetry_sidecar(loaded.paths["a-c8"]) is None


def test_newest_by_date_wins_and_the_rerun_is_reported(tmp_path: Path) -> None:
    old = make_result("p-c8", tput_per_gpu=900.0, date="2026-01-01T10:00:00+00:00")
    new = make_result("p-c8", tput_per_gpu=1000.0, date="2026-01-02T09:00:00+01:00")
    write_results(tmp_path / "b", [old])  # the older one sorts last by path
    write_results(tmp_path / "a", [new])
    loaded = load_results([tmp_path / "a", tmp_path / "b"])
    [kept] = loaded.results
    assert kept.metric("tput_per_gpu") == 1000.0
    [conflict] = loaded.conflicts
    assert conflict.kind == "rerun"
    assert conflict.kept == tmp_path / "a" / "p-c8.json"
    assert conflict.dropped == (tmp_path / "b" / "p-c8.json",)
    assert len(loaded.versions["p-c8"]) == 2
    assert loaded.warnings and "rerun" in loaded.warnings[0]


def test_dates_compare_as_instants_not_strings(tmp_path: Path) -> None:
    # 10:30+02:00 is 08:30Z: older than 09:00Z although it sorts later as text.
    a = make_result("p", tput_per_gpu=1.0, date="2026-01-01T10:30:00+02:00")
    b = make_result("p", tput_per_gpu=2.0, date="2026-01-01T09:00:00Z")
    write_results(tmp_path / "a", [a])
    write_results(tmp_path / "b", [b])
    assert load_results([tmp_path]).results[0].metric("tput_per_gpu") == 2.0


def test_identical_copies_are_not_a_warning(tmp_path: Path) -> None:
    r = make_result("p")
    write_results(tmp_path / "a", [r])
    write_results(tmp_path / "b", [r])
    loaded = load_results([tmp_path])
    assert [c.kind for c in loaded.conflicts] == ["identical"]
    assert loaded.warnings == []
    assert len(loaded.versions["p"]) == 1


def test_same_id_from_different_machines_is_flagged(tmp_path: Path) -> None:
    h100 = make_result("p", gpu_name="NVIDIA H100 80GB HBM3", date="2026-01-01T00:00:00Z")
    h200 = make_result("p", gpu_name="NVIDIA H200", date="2026-01-02T00:00:00Z")
    write_results(tmp_path / "h100", [h100])
    write_results(tmp_path / "h200", [h200])
    loaded = load_results([tmp_path])
    [conflict] = loaded.conflicts
    assert conflict.kind == "different_platform"
    assert "name each machine" in conflict.detail
    assert loaded.results[0].provenance.platform["accelerators"][0]["name"] == "NVIDIA H200"


def test_same_date_prefers_ok_and_is_reported(tmp_path: Path) -> None:
    ok = make_result("p", date="2026-01-01T00:00:00Z")
    failed = make_result("p", status="failed", date="2026-01-01T00:00:00Z")
    write_results(tmp_path / "z", [failed])
    write_results(tmp_path / "a", [ok])
    loaded = load_results([tmp_path])
    assert loaded.results[0].status == "ok"
    assert loaded.conflicts[0].kind == "same_date"


def test_files_can_be_given_directly_and_missing_paths_fail(tmp_path: Path) -> None:
    [path] = write_results(tmp_path, [make_result("p")])
    assert [r.point_id for r in load_results([path]).results] == ["p"]
    with pytest.raises(FileNotFoundError):
        load_results([tmp_path / "nope"])


def test_read_jsonl_ignores_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "x.telemetry.jsonl"
    path.write_text(json.dumps({"t_s": 0.0}) + "\n\n" + json.dumps({"t_s": 1.0}) + '\n{"t_s": 2')
    assert read_jsonl(path) == [{"t_s": 0.0}, {"t_s": 1.0}]


def test_a_file_that_claims_to_be_a_result_but_does_not_fit_is_skipped(tmp_path: Path) -> None:
    bad_status = make_result("bad-status")
    bad_status["status"] = "exploded"
    unknown_version = {"schema_version": 9, "point_id": "future"}
    v2_missing = {"schema_version": 2, "status": "ok", "identity": {"point_id": "v2-bad"}}
    write_results(tmp_path, [make_result("good"), bad_status, unknown_version])
    (tmp_path / "v2-bad.json").write_text(json.dumps(v2_missing))
    loaded = load_results([tmp_path])
    assert [r.point_id for r in loaded.results] == ["good"]
    skipped = {p.name: why for p, why in loaded.skipped}
    assert set(skipped) == {"bad-status.json", "future.json", "v2-bad.json"}
    assert skipped["bad-status.json"].startswith("invalid result: ")
    assert "status" in skipped["bad-status.json"]
    assert "schema_version 9" in skipped["future.json"]
    # the pydantic error is summarised (a few "loc: msg" parts), not dumped whole
    assert skipped["v2-bad.json"].startswith("invalid result: ")
    assert "Field required" in skipped["v2-bad.json"] and "\n" not in skipped["v2-bad.json"]
