"""InferX's vLLM export carries the random workload's flags as ``--metadata`` would
(FIXER-2 item 3, verifier F7's detail): without ``random_output_len`` the audit of
InferX's own export could never judge the reply lengths. Asserted on the written file
and on ``inferx audit --json`` of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.app import main
from inferx_core.interop.vllm_bench import workload_keys
from inferx_core.results.read import load_results
from inferx_core.testing import ServerProcess

LENIENT = {"max_loop_lag_p95_ms": 1000, "max_client_cpu_fraction": 1.0}


def _bench_and_export(tmp_path: Path, natural_len: int | None) -> tuple[Path, dict[str, Any]]:
    out, exported = tmp_path / "out", tmp_path / "vllm"
    config = tmp_path / "bench.json"
    with ServerProcess(ttft_ms=2, itl_ms=2, natural_len=natural_len) as server:
        config.write_text(json.dumps({"base_url": server.base_url, "validity": LENIENT}))
        argv = [
            *("bench", str(config), "--isl", "16", "--osl", "32", "--num-prompts", "16"),
            *("--concurrency", "4", "--output", str(out), "--no-telemetry", "--no-progress"),
            *(["--no-ignore-eos"] if natural_len is not None else []),
        ]
        assert main(argv) in (0, 1)
    argv = ["export", str(out), "--format", "vllm", "--detailed", "--output", str(exported)]
    assert main(argv) == 0
    [vllm_file] = exported.glob("*.json")
    return vllm_file, json.loads(vllm_file.read_text())


def _audit(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    main(["audit", str(path), "--json"])
    [audit] = json.loads(capsys.readouterr().out)["audits"]
    return dict(audit)


def _output_length_check(audit: dict[str, Any]) -> dict[str, Any]:
    assert "output_length" not in audit["not_judged"], audit["not_judged"]
    [check] = [c for c in audit["validity"]["checks"] if c["name"] == "output_length"]
    return dict(check)


def test_the_export_writes_the_random_flags_and_the_audit_judges_reply_lengths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vllm_file, data = _bench_and_export(tmp_path, natural_len=None)
    assert (data["random_input_len"], data["random_output_len"]) == (16, 32)
    assert data["ignore_eos"] is True
    # InferX's default draws lengths in [floor(r*L), L]: vLLM's ratio would misstate it
    assert data["random_range_ratio"] is None
    assert any(n.startswith("random_range_ratio: null") for n in data["inferx"]["notes"])
    check = _output_length_check(_audit(vllm_file, capsys))
    assert check["passed"] is True, check


def test_the_audit_of_the_export_flags_replies_that_stopped_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # without ignore_eos a model that stops at 4 tokens answers as asked for the point
    # (a natural stop), but not what a length benchmark wants: the audit of InferX's own
    # export now says the run measured another workload
    vllm_file, data = _bench_and_export(tmp_path, natural_len=4)
    assert data["random_output_len"] == 32 and data["ignore_eos"] is False
    assert data["completed"] == 16 and max(data["output_lens"]) <= 4
    check = _output_length_check(_audit(vllm_file, capsys))
    assert check["passed"] is False, check


def test_a_workload_that_is_not_random_gets_no_random_keys_and_says_why(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ServerProcess(ttft_ms=2, itl_ms=2) as server:
        argv = [
            *("bench", "--base-url", server.base_url, "--isl", "16", "--osl", "8"),
            *("--num-prompts", "4", "--concurrency", "1", "--output", str(out)),
            *("--no-telemetry", "--no-progress"),
        ]
        assert main(argv) in (0, 1)
    [result] = load_results([out]).results
    assert result.workload is not None
    assert workload_keys(result)[0]["random_output_len"] == 8
    result.workload.spec["kind"] = "dataset"
    keys, why = workload_keys(result)
    assert keys == {} and why is not None and "the workload is dataset" in why
