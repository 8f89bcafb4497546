"""GuideLLM and ``vllm bench serve --save-detailed`` files (real, tests/interop/fixtures) read,
judged and diagnosed; planted faults in copies caught by the check meant for each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from audit_tools import checks_by_name

from inferx_core.cli.app import main
from inferx_core.interop.guidellm import NO_CHUNK_TIMES

FIXTURES = Path(__file__).parent / "fixtures"
GUIDELLM = FIXTURES / "guidellm" / "c2-clean" / "benchmarks.json"
VLLM_CHAT = FIXTURES / "vllm" / "vllm-c2-chat.json"
VLLM_COMPLETIONS = FIXTURES / "vllm" / "vllm-c2-completions.json"


def _audit(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, dict]:
    code = main(["audit", "--json", str(path)])
    return code, json.loads(capsys.readouterr().out)["audits"][0]


def test_guidellm_benchmark_imports_with_what_it_cannot_tell(tmp_path: Path, capsys) -> None:
    out = tmp_path / "imported"
    assert main(["import", str(GUIDELLM), "--output", str(out)]) == 0
    (path,) = out.glob("*.json")
    written = json.loads(path.read_text())
    imported = written["provenance"]["imported_from"]
    assert (imported["tool"], imported["version"]) == ("GuideLLM", "0.8.1")
    assert imported["not_judged"]["chunk_coalescing"] == NO_CHUNK_TIMES
    assert written["latency"]["itl_ms"]["median"] is None
    assert written["null_reasons"]["median_itl_ms"] == NO_CHUNK_TIMES
    assert written["identity"]["concurrency"] == 2 and written["status"] == "ok"
    rows = path.with_name(path.stem + ".requests.jsonl").read_text().splitlines()
    assert len(rows) == 30
    # TPOT from first and last token times: the scripted server's 40 ms per token
    assert 38 < written["latency"]["tpot_ms"]["median"] < 45


def test_guidellm_own_warnings_are_kept_in_the_verdict(capsys) -> None:
    code, audit = _audit(capsys, GUIDELLM)
    warned = checks_by_name(audit)["guidellm_warning.generation_delay_ttft"]
    assert code == 0 and warned["severity"] == "marks" and not warned["passed"]
    assert warned["why"].startswith("GuideLLM warned: mean generation delay")
    assert audit["diagnosis"][0]["rule"] == "tool_warned"


def test_guidellm_requests_removed_are_caught(tmp_path: Path, capsys) -> None:
    data = json.loads(GUIDELLM.read_text())
    del data["benchmarks"][0]["requests"]["successful"][-5:]
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "benchmarks.json").write_text(json.dumps(data))
    code, audit = _audit(capsys, tmp_path / "g")
    check = checks_by_name(audit)["records_complete"]
    assert code == 1 and not check["passed"] and (check["value"], check["limit"]) == (25.0, 30.0)


def test_guidellm_whole_reply_in_one_read_is_caught(tmp_path: Path, capsys) -> None:
    data = json.loads(GUIDELLM.read_text())
    for row in data["benchmarks"][0]["requests"]["successful"]:
        timings = row["info"]["timings"]
        timings["first_token_iteration"] = timings["last_token_iteration"]
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "benchmarks.json").write_text(json.dumps(data))
    _, audit = _audit(capsys, tmp_path / "g")
    assert not checks_by_name(audit)["whole_reply_at_once"]["passed"]
    assert audit["diagnosis"][0]["rule"] == "starved_client"


def test_vllm_chat_ttft_taken_at_the_role_chunk_is_caught(capsys) -> None:
    """vLLM 0.32's chat client stamps TTFT at the scripted server's role-only chunk."""
    code, audit = _audit(capsys, VLLM_CHAT)
    checks = checks_by_name(audit)
    assert code == 1 and not checks["first_chunk_without_token"]["passed"]
    assert checks["first_chunk_without_token"]["value"] == 1.0
    # the records start at the first token: usage agrees, TTFT is the server's ~50 ms
    assert checks["usage_cross_check"]["passed"]
    assert audit["diagnosis"][0]["rule"] == "early_first_chunk"
    assert "--backend openai" in audit["diagnosis"][0]["fix"]
    assert checks["output_length"]["passed"]  # random_output_len=16 came by --metadata


def test_vllm_chat_records_start_at_the_first_token(tmp_path: Path, capsys) -> None:
    assert main(["import", str(VLLM_CHAT), "--output", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "vllm-c2-chat.json").read_text())
    assert written["provenance"]["extra"]["tool_figures"]["median_ttft_ms"] < 5  # vLLM's
    assert 50 <= written["latency"]["ttft_ms"]["median"] < 70  # the first token's
    assert 38 < written["latency"]["tpot_ms"]["median"] < 42  # the server's 40 ms


def test_vllm_completions_run_is_trustworthy(capsys) -> None:
    code, audit = _audit(capsys, VLLM_COMPLETIONS)
    assert code == 0 and audit["trustworthy"]
    assert "dispatch_lateness" in audit["not_judged"]


def test_vllm_usage_edited_is_caught(tmp_path: Path, capsys) -> None:
    data = json.loads(VLLM_COMPLETIONS.read_text())
    data["output_lens"][3] = 200  # more than the 16 asked for
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    _, audit = _audit(capsys, edited)
    assert (
        "usage says 200 completion tokens, max_tokens was 16"
        in (checks_by_name(audit)["usage_cross_check"]["why"])
    )


def test_vllm_requests_removed_are_caught(tmp_path: Path, capsys) -> None:
    data = json.loads(VLLM_COMPLETIONS.read_text())
    for key in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"):
        data[key] = data[key][:-4]
    edited = tmp_path / "removed.json"
    edited.write_text(json.dumps(data))
    _, audit = _audit(capsys, edited)
    assert not checks_by_name(audit)["records_complete"]["passed"]


def test_a_file_copied_twice_imports_twice(tmp_path: Path, capsys) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(VLLM_CHAT, tmp_path / name / "run.json")
    data = json.loads((tmp_path / "b" / "run.json").read_text())
    data["label"] = "second"
    (tmp_path / "b" / "run.json").write_text(json.dumps(data))
    out = tmp_path / "out"
    files = [str(tmp_path / "a" / "run.json"), str(tmp_path / "b" / "run.json")]
    assert main(["import", *files, "--output", str(out)]) == 0
    shas = {
        json.loads(p.read_text())["provenance"]["imported_from"]["sha256"]
        for p in out.glob("*.json")
    }
    assert len(shas) == 2
