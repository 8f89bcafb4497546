"""``inferx import`` and ``inferx audit`` on files the real tools wrote (tests/interop/fixtures,
README there: the command and version of each), and planted faults in copies of them.

Every assertion reads what was written: the result files, their .requests.jsonl
sidecars, ``inferx audit --json``'s output and its exit status.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from audit_tools import checks_by_name
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.interop.tool_checks import _in_flight_peak
from inferx_core.load.records.request import RequestRecord

FIXTURES = Path(__file__).parent / "fixtures"
AIPERF_OWN_TOKENIZER = FIXTURES / "aiperf" / "c2-own-tokenizer"
AIPERF_SERVER_TOKENS = FIXTURES / "aiperf" / "c1-server-tokens"
INFERENCE_PERF = FIXTURES / "inference-perf" / "stage_0_lifecycle_metrics.json"


def _audit(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, dict]:
    code = main(["audit", "--json", *map(str, paths)])
    return code, json.loads(capsys.readouterr().out)


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_aiperf_import_writes_records_and_the_verdict(tmp_path: Path, capsys) -> None:
    out = tmp_path / "imported"
    summary = AIPERF_OWN_TOKENIZER / "profile_export_aiperf.json"
    assert main(["import", str(summary), "--output", str(out)]) == 0
    written = json.loads((out / "aiperf-c2-own-tokenizer.json").read_text())
    imported = written["provenance"]["imported_from"]
    assert (imported["tool"], imported["version"]) == ("AIPerf", "0.13.0")
    rows = _jsonl(out / "aiperf-c2-own-tokenizer.requests.jsonl")
    assert len(rows) == 40 and all(r["usage_output_tokens"] == 16 for r in rows)
    # InferX's statistics run on the records: 16 tokens per reply from the server's usage
    assert written["load"]["total_output_tokens"] == 640
    # AIPerf counted 33 per reply with its own tokenizer: its throughput is 2.06x
    failing = {c["name"] for c in written["validity"]["checks"] if not c["passed"]}
    assert written["status"] == "invalid" and "tool_token_count" in failing
    assert written["provenance"]["extra"]["tool_figures"]["total_output_tokens"] == 1320
    assert "receive_lag" in imported["not_judged"]


def test_audit_names_what_cannot_be_judged_and_the_fix(capsys) -> None:
    code, report = _audit(capsys, AIPERF_OWN_TOKENIZER)
    assert code == 1 and not report["trustworthy"]
    (audit,) = report["audits"]
    assert audit["tool"] == "AIPerf" and audit["version"] == "0.13.0"
    usage = [d for d in audit["diagnosis"] if d["rule"] == "usage_disagrees"]
    assert usage and "--use-server-token-count" in usage[0]["fix"]
    assert "33.0 against 16.0" in " ".join(usage[0]["evidence"])
    assert "client_cpu" in audit["not_judged"]


def test_inference_perf_report_is_judged_from_its_statistics(capsys) -> None:
    code, report = _audit(capsys, INFERENCE_PERF)
    (audit,) = report["audits"]
    checks = checks_by_name(audit)
    # a median ITL of 0.08 ms beside a TPOT of 7.4 ms: reads coalesced, or chunks of
    # several of its tokens (each stamped with the chunk's time): marked, not invalid
    coalescing = checks["chunk_coalescing"]
    assert not coalescing["passed"] and coalescing["severity"] == "marks"
    assert "per_request: true" in coalescing["why"]
    assert checks["achieved_rate"]["passed"] and checks["error_rate"]["passed"]
    assert "no requests" in audit["not_judged"]["usage_cross_check"]
    assert audit["diagnosis"][0]["rule"] == "starved_client"
    assert code == 0


def test_a_folder_of_mixed_tools_is_audited_file_by_file(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "mixed"
    _copy(AIPERF_SERVER_TOKENS, folder / "aiperf")
    shutil.copy(INFERENCE_PERF, folder / INFERENCE_PERF.name)
    (folder / "notes.json").write_text('{"a": 1}')
    code, report = _audit(capsys, folder)
    assert sorted(a["tool"] for a in report["audits"]) == ["AIPerf", "inference-perf"]
    assert report["ignored"] == [str(folder / "notes.json")]
    assert code == 1


def test_requests_removed_are_caught(tmp_path: Path, capsys) -> None:
    run = _copy(AIPERF_SERVER_TOKENS, tmp_path / "removed")
    rows = _jsonl(run / "profile_export.jsonl")
    _write_jsonl(run / "profile_export.jsonl", rows[:-3])
    _, report = _audit(capsys, run)
    check = checks_by_name(report["audits"][0])["records_complete"]
    assert not check["passed"] and (check["value"], check["limit"]) == (27.0, 30.0)
    assert "incomplete_file" in [d["rule"] for d in report["audits"][0]["diagnosis"]]


def test_edited_usage_is_caught(tmp_path: Path, capsys) -> None:
    run = _copy(AIPERF_SERVER_TOKENS, tmp_path / "usage")
    rows = _jsonl(run / "profile_export.jsonl")
    rows[4]["metrics"]["usage_completion_tokens"]["value"] = 2  # fewer than its 16 chunks
    _write_jsonl(run / "profile_export.jsonl", rows)
    _, report = _audit(capsys, run)
    check = checks_by_name(report["audits"][0])["usage_cross_check"]
    assert not check["passed"] and "usage says 2 completion tokens" in check["why"]


def test_a_concurrency_never_reached_is_caught(tmp_path: Path, capsys) -> None:
    run = _copy(AIPERF_OWN_TOKENIZER, tmp_path / "c16")
    summary = json.loads((run / "profile_export_aiperf.json").read_text())
    summary["input_config"]["phases"][0]["concurrency"] = 16  # it ran at 2
    (run / "profile_export_aiperf.json").write_text(json.dumps(summary))
    _, report = _audit(capsys, run)
    check = checks_by_name(report["audits"][0])["concurrency_reached"]
    assert not check["passed"] and check["value"] == 2.0
    rules = [d["rule"] for d in report["audits"][0]["diagnosis"]]
    assert "unreached_concurrency" in rules


def test_imports_never_overwrite_each_other(tmp_path: Path, capsys) -> None:
    """Two runs whose files give one point id (AIPerf names every summary the same)."""
    first = _copy(AIPERF_SERVER_TOKENS, tmp_path / "a" / "run")
    second = _copy(AIPERF_SERVER_TOKENS, tmp_path / "b" / "run")
    rows = _jsonl(second / "profile_export.jsonl")
    _write_jsonl(second / "profile_export.jsonl", rows[:10])
    summary = second / "profile_export_aiperf.json"
    summary.write_text(summary.read_text().replace('"aiperf_version"', '"aiperf_version" '))
    out = tmp_path / "out"
    files = [str(first / "profile_export_aiperf.json"), str(summary)]
    assert main(["import", *files, "--output", str(out)]) == 0
    written = sorted(p.name for p in out.glob("*.json"))
    assert written == ["aiperf-run-2.json", "aiperf-run.json"]
    assert len(_jsonl(out / "aiperf-run-2.requests.jsonl")) == 10
    # importing the same file again replaces its own result, nothing else
    assert main(["import", files[0], "--output", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.json")) == written


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 1000), st.integers(1, 300)), max_size=30))
def test_in_flight_peak_is_the_most_requests_open_at_once(spans) -> None:
    records = [
        RequestRecord(request_id=i, prompt_tokens=1, max_tokens=1, send_ns=s, end_ns=s + d)
        for i, (s, d) in enumerate(spans)
    ]
    instants = {s for s, _ in spans}
    brute = max((sum(1 for s, d in spans if s <= t < s + d) for t in instants), default=0)
    assert _in_flight_peak(records) == brute


def test_a_rate_never_offered_is_caught_and_a_kept_one_passes(capsys) -> None:
    """AIPerf at --request-rate 10 under --concurrency 1 sent 2.25 req/s; rate 2 under 8: 1.84."""
    code, report = _audit(capsys, FIXTURES / "aiperf" / "rate10-capped-c1")
    audit = report["audits"][0]
    check = checks_by_name(audit)["rate_reached"]
    assert code == 1 and not check["passed"] and check["value"] < 0.3
    assert audit["diagnosis"][0]["rule"] == "saturation"
    assert "--concurrency above rate x latency" in audit["diagnosis"][0]["fix"]
    code, report = _audit(capsys, FIXTURES / "aiperf" / "rate2-c8")
    assert code == 0 and checks_by_name(report["audits"][0])["rate_reached"]["passed"]


def test_the_per_request_file_alone_is_refused_with_the_fix(tmp_path: Path, capsys) -> None:
    jsonl = AIPERF_SERVER_TOKENS / "profile_export.jsonl"
    assert main(["import", str(jsonl), "--output", str(tmp_path)]) == 2
    assert "give profile_export_aiperf.json" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_broken_file_stops_the_import_before_anything_is_written(tmp_path: Path, capsys) -> None:
    broken = _copy(AIPERF_SERVER_TOKENS, tmp_path / "broken")
    rows = _jsonl(broken / "profile_export.jsonl")
    del rows[2]["metadata"]["request_start_ns"]
    _write_jsonl(broken / "profile_export.jsonl", rows)
    out = tmp_path / "out"
    files = [str(AIPERF_OWN_TOKENIZER / "profile_export_aiperf.json")]
    files.append(str(broken / "profile_export_aiperf.json"))
    assert main(["import", *files, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "profile_export.jsonl: request 3: the field 'request_start_ns' is missing" in err
    assert not out.exists()
    code, report = _audit(capsys, broken)
    assert code == 1 and "request 3" in report["errors"][0]["why"]
