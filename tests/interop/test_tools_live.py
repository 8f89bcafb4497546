"""AIPerf and GuideLLM themselves (``make aiperf``, ``make guidellm``: their own venvs) run
against InferX's scripted server; ``inferx audit`` judges the files they write.

Two loads: one the two cores of the development machine serve cleanly (40 ms per
token, concurrency 2) and one that starves AIPerf's client (2 ms per token,
concurrency 64: whole replies per read). The clean run's figures are held to
InferX's own run of the same load within :data:`TOLERANCE`. Slow (the tools
start in seconds and run for tens); `make test` sets INFERX_REQUIRE_TOOLS=1, so a
missing tool venv fails there instead of skipping.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from inferx_core.cli.app import main
from inferx_core.testing import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
#: A clean tool run against InferX's own run of the same load: TPOT and output throughput.
TOLERANCE = 0.15


def _tool(venv: str, name: str, target: str) -> Path:
    found = ROOT / venv / "bin" / name
    if found.is_file():
        return found
    why = f"{name} is not installed in {venv} (make {target})"
    if os.environ.get("INFERX_REQUIRE_TOOLS") == "1":
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def aiperf_bin() -> Path:
    return _tool(".venv-aiperf", "aiperf", "aiperf")


@pytest.fixture(scope="module")
def guidellm_bin() -> Path:
    return _tool(".venv-guidellm", "guidellm", "guidellm")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inferx_core.demo.tiny_model import build_tiny_model

    return Path(build_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-llama"))


#: The load of every AIPerf run here (c, n and osl vary): AIPerf's own flags.
AIPERF_ARGS = shlex.split(
    "profile --model test-model --endpoint-type chat --streaming --synthetic-input-tokens-mean "
    "32 --synthetic-input-tokens-stddev 0 --output-tokens-stddev 0 --extra-inputs "
    "ignore_eos:true --use-server-token-count --ui-type none"
)


def _aiperf(aiperf: Path, url: str, out: Path, tokenizer: Path, *, c: int, n: int, osl: int):
    argv = [str(aiperf), *AIPERF_ARGS, "--url", url, "--concurrency", str(c)]
    argv += ["--request-count", str(n), "--output-tokens-mean", str(osl)]
    argv += ["--tokenizer", str(tokenizer), "--artifact-dir", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _audit(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    main(["audit", "--json", str(path)])
    return json.loads(capsys.readouterr().out)["audits"][0]


def _failing(audit: dict) -> list[str]:
    return [f"{c['name']}: {c['why']}" for c in audit["validity"]["checks"] if not c["passed"]]


def _inferx_bench(url: str, out: Path, *, c: int, n: int, osl: int) -> dict:
    argv = ["bench", "--base-url", url, "--api", "chat", "--isl", "32", "--osl", str(osl)]
    argv += ["--concurrency", str(c), "--num-prompts", str(n), "--output", str(out)]
    main(argv)
    (path,) = [p for p in out.glob("*.json") if not p.name.startswith(".")]
    return json.loads(path.read_text())


#: Tries at a clean AIPerf run: on two cores shared with other work, AIPerf's own workers
#: sometimes fall behind even at concurrency 2, and the audit rightly says so.
CLEAN_TRIES = 3


def _clean_aiperf_run(aiperf: Path, url: str, root: Path, tokenizer: Path, capsys) -> Path:
    """The first of CLEAN_TRIES runs the audit finds trustworthy; a run it rejects must be
    rejected for a starved client only (never its usage, counts or load)."""
    rejected = []
    for attempt in range(CLEAN_TRIES):
        run = _aiperf(aiperf, url, root / f"aiperf-{attempt}", tokenizer, c=2, n=30, osl=16)
        audit = _audit(capsys, run)
        if audit["trustworthy"]:
            return run
        assert {d["rule"] for d in audit["diagnosis"]} <= {"starved_client", "thin_percentiles"}
        rejected.append(_failing(audit))
    raise AssertionError(f"no clean AIPerf run in {CLEAN_TRIES}: {rejected}")


def test_aiperf_clean_run_passes_and_agrees_with_inferx(
    aiperf_bin: Path, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    with ServerProcess(ttft_ms=50, itl_ms=40) as server:
        ours = _inferx_bench(server.base_url, tmp_path / "inferx", c=2, n=30, osl=16)
        capsys.readouterr()
        run = _clean_aiperf_run(aiperf_bin, server.base_url, tmp_path, tokenizer, capsys)
    out = tmp_path / "imported"
    assert main(["import", str(run / "profile_export_aiperf.json"), "--output", str(out)]) == 0
    (path,) = out.glob("*.json")
    theirs = json.loads(path.read_text())
    pairs = (
        (theirs["latency"]["tpot_ms"]["median"], ours["latency"]["tpot_ms"]["median"]),
        (theirs["throughput"]["output_throughput"], ours["throughput"]["output_throughput"]),
    )
    for a, b in pairs:
        assert abs(a - b) / b <= TOLERANCE, (a, b)


def test_aiperf_starved_run_is_flagged(
    aiperf_bin: Path, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    with ServerProcess(ttft_ms=20, itl_ms=2) as server:
        run = _aiperf(
            aiperf_bin, server.base_url, tmp_path / "aiperf", tokenizer, c=64, n=256, osl=64
        )
    capsys.readouterr()
    audit = _audit(capsys, run)
    assert not audit["trustworthy"]
    assert audit["diagnosis"][0]["rule"] == "starved_client", audit["diagnosis"]


def test_guidellm_clean_run_passes(
    guidellm_bin: Path, tokenizer: Path, tmp_path: Path, capsys
) -> None:
    with ServerProcess(ttft_ms=50, itl_ms=40) as server:
        argv = [str(guidellm_bin), "run", "--disable-progress"]
        argv += ["--backend", f"kind=openai_http,target={server.base_url},model=test-model"]
        argv += ["--profile", "kind=concurrent,streams=2"]
        argv += ["--constraint", "kind=max_requests,count=20"]
        argv += ["--data", "kind=synthetic_text,prompt_tokens=32,output_tokens=16"]
        argv += ["--tokenizer", f"kind=hf_auto,model={tokenizer}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    audit = _audit(capsys, tmp_path / "benchmarks.json")
    assert audit["tool"] == "GuideLLM" and audit["trustworthy"], _failing(audit)
    assert "chunk_coalescing" in audit["not_judged"]
