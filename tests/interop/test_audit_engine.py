"""The files AIPerf, GuideLLM, ``vllm bench serve`` and InferX itself wrote against the real
vLLM CPU engine (the tiny demo model, one load: concurrency 8, 48 requests, 32 in / 32 out;
tests/interop/fixtures/README.md), audited.

What the audit can and cannot tell on the same server: AIPerf and GuideLLM reported
about half the throughput and twice the TPOT of InferX's own run (their worker processes
share the two cores with the engine). AIPerf's records show it: its workers sent
requests 21 ms (p99 123 ms) after it handed them out (``client_dispatch_delay``).
GuideLLM's do not, and neither tool records its own CPU use, which the audit says
(``client_cpu`` not judged). vLLM's chat client stamped a role-only chunk as the first
token in 23 of 48 replies, harmlessly here (the token followed within a millisecond).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from audit_tools import checks_by_name

from inferx_core.cli.app import main

ENGINE = Path(__file__).parent / "fixtures" / "vllm-cpu-engine"


def _audits(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, dict]]:
    code = main(["audit", "--json", str(ENGINE)])
    return code, {a["tool"]: a for a in json.loads(capsys.readouterr().out)["audits"]}


def test_every_tool_of_the_same_load_is_read_and_judged(capsys) -> None:
    code, audits = _audits(capsys)
    assert set(audits) == {"AIPerf", "GuideLLM", "vllm bench serve", "InferX"}
    for tool in ("GuideLLM", "vllm bench serve"):
        assert audits[tool]["status"] == "ok" and audits[tool]["trustworthy"], tool
    # InferX's own client flagged its own reads on the busy cores: the folder is not clean
    assert not audits["InferX"]["trustworthy"] and code == 1


def test_aiperf_workers_falling_behind_are_caught(capsys) -> None:
    _, audits = _audits(capsys)
    aiperf = audits["AIPerf"]
    delay = checks_by_name(aiperf)["client_dispatch_delay"]
    assert not aiperf["trustworthy"] and not delay["passed"] and delay["value"] > 25
    assert aiperf["diagnosis"][0]["rule"] == "starved_client"
    assert "--workers-max" in aiperf["diagnosis"][0]["fix"]


def test_what_the_files_cannot_show_is_said(capsys) -> None:
    _, audits = _audits(capsys)
    for tool in ("AIPerf", "GuideLLM", "vllm bench serve"):
        assert "client_cpu" in audits[tool]["not_judged"], tool


def test_vllm_role_chunk_is_seen_and_judged_harmless(capsys) -> None:
    _, audits = _audits(capsys)
    checks = checks_by_name(audits["vllm bench serve"])
    first = checks["first_chunk_without_token"]
    assert first["passed"] and first["why"].startswith("23 of 48 replies began with a chunk")
    assert checks["usage_cross_check"]["passed"]
