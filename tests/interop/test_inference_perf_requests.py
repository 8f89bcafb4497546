"""inference-perf's per-request report read as request records, on files inference-perf
0.7.0 itself wrote against InferX's scripted server (tests/interop/fixtures/README.md):
InferX's statistics and checks run on its requests, planted faults are caught by the
check meant for each, and the report beside its summary is one run, not two."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from audit_tools import checks_by_name
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.interop.inference_perf_requests import PER_REQUEST_NAME, READ_GAP_NS, _reads

FIXTURES = Path(__file__).parent / "fixtures" / "inference-perf"
CLEAN = FIXTURES / "rate2-clean"
STARVED = FIXTURES / "rate100-starved"
OWN_TOKENIZER = FIXTURES / "rate2-own-tokenizer"
SUMMARY = "summary_lifecycle_metrics.json"


def _audit(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main(["audit", "--json", *map(str, paths)])
    return code, json.loads(capsys.readouterr().out)["audits"]


def _copy(tmp_path: Path, src: Path = CLEAN) -> Path:
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def _entries(folder: Path) -> list[dict]:
    return json.loads((folder / PER_REQUEST_NAME).read_text())


def test_the_summary_with_its_per_request_report_is_judged_per_request(capsys) -> None:
    code, audits = _audit(capsys, CLEAN / SUMMARY)
    (audit,) = audits
    checks = checks_by_name(audit)
    n = len(_entries(CLEAN))
    assert checks["records_complete"]["passed"] and checks["records_complete"]["value"] == n
    for name in ("usage_cross_check", "chunk_coalescing", "whole_reply_at_once", "output_length"):
        assert checks[name]["passed"], checks[name]["why"]
        assert name not in audit["not_judged"]
    # its figures count the server's usage (use_server_output_tokens in its config.yaml)
    assert "use_server_output_tokens" in audit["not_judged"]["tool_token_count"]
    assert "scheduled_time" in audit["not_judged"]["dispatch_lateness"]
    assert audit["trustworthy"] and code == 0


def test_the_records_are_written_beside_the_imported_result(tmp_path: Path) -> None:
    out = tmp_path / "imported"
    assert main(["import", str(CLEAN / SUMMARY), "--output", str(out)]) == 0
    (result_path,) = out.glob("*.json")
    result = json.loads(result_path.read_text())
    (sidecar,) = out.glob("*.requests.jsonl")
    rows = [json.loads(line) for line in sidecar.read_text().splitlines()]
    entries = _entries(CLEAN)
    assert len(rows) == len(entries) == result["load"]["completed"]
    assert result["provenance"]["imported_from"]["tool"] == "inference-perf"
    # InferX's own TPOT from inference-perf's chunk times: the scripted server's 40 ms
    assert 38 <= result["latency"]["tpot_ms"]["median"] <= 48
    assert all(r["usage_output_tokens"] == 16 for r in rows)


def test_coalesced_reads_in_a_starved_run_are_caught_per_request(capsys) -> None:
    _, (audit,) = _audit(capsys, STARVED / SUMMARY)
    checks = checks_by_name(audit)
    assert not checks["chunk_coalescing"]["passed"], checks["chunk_coalescing"]["why"]
    assert not audit["trustworthy"]
    assert audit["diagnosis"][0]["rule"] == "starved_client"


def test_its_own_token_count_doubling_the_throughput_is_caught(capsys) -> None:
    """Without use_server_output_tokens inference-perf counts with its tokenizer: 33 tokens
    per reply where the server generated 16, so its throughput and TPOT are off 2x."""
    _, (audit,) = _audit(capsys, OWN_TOKENIZER / SUMMARY)
    check = checks_by_name(audit)["tool_token_count"]
    assert not check["passed"] and "33.0 against 16.0" in check["why"]
    assert audit["diagnosis"][0]["rule"] == "usage_disagrees"
    figures = json.loads((OWN_TOKENIZER / SUMMARY).read_text())["successes"]
    assert figures["output_tokens"]["mean"] == 16 and figures["output_len"]["mean"] == 33


def test_requests_removed_are_caught(tmp_path: Path, capsys) -> None:
    folder = _copy(tmp_path)
    entries = _entries(folder)
    (folder / PER_REQUEST_NAME).write_text(json.dumps(entries[:-3]))
    _, (audit,) = _audit(capsys, folder / SUMMARY)
    check = checks_by_name(audit)["records_complete"]
    assert not check["passed"] and check["value"] == len(entries) - 3
    assert audit["diagnosis"][0]["rule"] == "incomplete_file"


def test_edited_usage_is_caught(tmp_path: Path, capsys) -> None:
    folder = _copy(tmp_path)
    entries = _entries(folder)
    entries[2]["info"]["response_metrics"]["server_usage"]["completion_tokens"] = 1600
    (folder / PER_REQUEST_NAME).write_text(json.dumps(entries))
    _, (audit,) = _audit(capsys, folder / SUMMARY)
    assert not checks_by_name(audit)["usage_cross_check"]["passed"]


def test_a_folder_holds_one_run_per_report_not_a_second_of_the_requests(capsys) -> None:
    _, audits = _audit(capsys, CLEAN)
    paths = sorted(Path(a["path"]).name for a in audits)
    assert paths == ["stage_0_lifecycle_metrics.json", SUMMARY]


def test_the_per_request_report_alone_is_a_run_of_its_records(tmp_path: Path, capsys) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(CLEAN / PER_REQUEST_NAME, alone / PER_REQUEST_NAME)
    _, (audit,) = _audit(capsys, alone / PER_REQUEST_NAME)
    assert audit["tool"] == "inference-perf"
    assert SUMMARY in audit["not_judged"]["records_complete"]
    assert checks_by_name(audit)["chunk_coalescing"]["passed"]


def test_importing_the_per_request_report_beside_its_summary_names_the_summary(
    capsys,
) -> None:
    assert main(["import", str(CLEAN / PER_REQUEST_NAME), "--output", "unused"]) != 0
    assert SUMMARY in capsys.readouterr().err


def test_a_broken_entry_is_named(tmp_path: Path, capsys) -> None:
    folder = _copy(tmp_path)
    entries = _entries(folder)
    del entries[4]["start_time"]
    (folder / PER_REQUEST_NAME).write_text(json.dumps(entries))
    capsys.readouterr()
    assert main(["audit", "--json", str(folder / SUMMARY)]) == 1
    err = capsys.readouterr().err
    assert f"{PER_REQUEST_NAME}: request 5: the field 'start_time' is missing" in err


@given(st.lists(st.floats(min_value=0, max_value=1e-2, allow_nan=False), max_size=40))
def test_chunks_of_one_read_share_its_time(gaps: list[float]) -> None:
    times = [100.0]
    for g in gaps:
        times.append(times[-1] + g)
    reads = _reads(times)
    assert len(reads) == len(times) and reads == sorted(reads)
    for i in range(1, len(reads)):
        step = round(times[i] * 1e9) - reads[i - 1]
        # a chunk within READ_GAP_NS of the read before it is that read; else its own time
        assert reads[i] == (reads[i - 1] if 0 <= step < READ_GAP_NS else round(times[i] * 1e9))
