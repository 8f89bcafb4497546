"""AIPerf, GuideLLM and InferX itself run on one load, and ``inferx audit`` of what they
wrote: shared by tests/interop/test_tools_live.py (the scripted server) and
tests/e2e/test_audit_tools_e2e.py (the real vLLM CPU engine).

The tools live in their own venvs (``make aiperf``, ``make guidellm``); `make test` sets
INFERX_REQUIRE_TOOLS=1, so a missing one fails there instead of skipping.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.app import main

ROOT = Path(__file__).resolve().parents[1]


def tool_bin(venv: str, name: str, target: str) -> Path:
    """The tool's executable; missing, a failure under INFERX_REQUIRE_TOOLS=1, else a skip
    naming the make target that installs it."""
    found = ROOT / venv / "bin" / name
    if found.is_file():
        return found
    why = f"{name} is not installed in {venv} (make {target})"
    if os.environ.get("INFERX_REQUIRE_TOOLS") == "1":
        pytest.fail(why)
    pytest.skip(why)


#: Every AIPerf run here: chat, streaming, 32 prompt tokens, exact output lengths, the
#: server's token counts (AIPerf's flags).
AIPERF_ARGS = shlex.split(
    "profile --endpoint-type chat --streaming --synthetic-input-tokens-mean 32 "
    "--synthetic-input-tokens-stddev 0 --output-tokens-stddev 0 --extra-inputs "
    "ignore_eos:true --use-server-token-count --ui-type none"
)


def aiperf_argv(aiperf: Path, url: str, out: Path, tokenizer: Path, **load: Any) -> list[str]:
    """``load``: model, n (requests), osl, and c (closed loop) or rate (constant arrivals,
    c then caps the requests in flight)."""
    argv = [str(aiperf), *AIPERF_ARGS, "--model", load.get("model", "test-model"), "--url", url]
    argv += ["--request-count", str(load["n"]), "--output-tokens-mean", str(load["osl"])]
    argv += ["--concurrency", str(load["c"])]
    if load.get("rate"):
        argv += ["--request-rate", str(load["rate"]), "--arrival-pattern", "constant"]
    return [*argv, "--tokenizer", str(tokenizer), "--artifact-dir", str(out)]


def finished(done: subprocess.CompletedProcess[str] | subprocess.Popen[str], out: str = "") -> None:
    assert done.returncode == 0, out[-4000:]


def run_aiperf(aiperf: Path, url: str, out: Path, tokenizer: Path, **load: Any) -> Path:
    done = subprocess.run(
        aiperf_argv(aiperf, url, out, tokenizer, **load),
        capture_output=True,
        text=True,
        timeout=600,
    )
    finished(done, done.stdout + done.stderr)
    return out


def guidellm_argv(guidellm: Path, url: str, tokenizer: Path, **load: Any) -> list[str]:
    """``load``: model, n, osl, and c (concurrent streams) or rate (constant arrivals)."""
    profile = (
        f"kind=constant,rate={load['rate']}"
        if load.get("rate")
        else (f"kind=concurrent,streams={load['c']}")
    )
    argv = [str(guidellm), "run", "--disable-progress", "--profile", profile]
    argv += ["--backend", f"kind=openai_http,target={url},model={load.get('model', 'test-model')}"]
    argv += ["--constraint", f"kind=max_requests,count={load['n']}"]
    argv += ["--data", f"kind=synthetic_text,prompt_tokens=32,output_tokens={load['osl']}"]
    return [*argv, "--tokenizer", f"kind=hf_auto,model={tokenizer}"]


def audit(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    """``inferx audit --json`` of one run's file(s): its one audit."""
    capsys.readouterr()
    main(["audit", "--json", str(path)])
    (found,) = json.loads(capsys.readouterr().out)["audits"]
    return found


def failing(found: dict[str, Any]) -> list[str]:
    return [f"{c['name']}: {c['why']}" for c in found["validity"]["checks"] if not c["passed"]]


def checks_by_name(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One audit's validity checks, by name."""
    return {c["name"]: c for c in found["validity"]["checks"]}


def assert_passed(found: dict[str, Any], *names: str) -> None:
    """Each named check ran on this audit and passed."""
    checks = checks_by_name(found)
    for name in names:
        assert name in checks and checks[name]["passed"], (name, checks.get(name), failing(found))


def inferx_argv(url: str, out: Path, **load: Any) -> list[str]:
    """``inferx bench`` of the same load (c: closed loop; rate: constant arrivals capped at c),
    every prompt and reply of exactly the lengths asked, as the tools' runs here (InferX's
    own default draws them from [0.8 L, L], 14.4 tokens for 16 on average)."""
    argv = ["bench", "--base-url", url, "--api", "chat", "--isl", "32", "--osl", str(load["osl"])]
    argv += ["--range-semantics", "fixed"]
    argv += ["--num-prompts", str(load["n"]), "--output", str(out), "--no-progress"]
    if load.get("model"):
        argv += ["--model", load["model"]]
    if load.get("rate"):
        argv += ["--request-rate", str(load["rate"]), "--arrival", "constant"]
        return [*argv, "--max-concurrency", str(load["c"])]
    return [*argv, "--concurrency", str(load["c"])]


def inferx_result(out: Path) -> dict[str, Any]:
    (path,) = [p for p in out.glob("*.json") if not p.name.startswith(".")]
    return json.loads(path.read_text())


def imported(path: Path, out: Path) -> dict[str, Any]:
    """``inferx import`` of one tool file: the one result it wrote."""
    assert main(["import", str(path), "--output", str(out)]) == 0
    (written,) = out.glob("*.json")
    return json.loads(written.read_text())


def agreement(theirs: dict[str, Any], ours: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The tool's own figures (as it reported them: ``provenance.extra.tool_figures``)
    beside InferX's: median TPOT and output throughput."""
    figures = theirs["provenance"]["extra"]["tool_figures"]
    return {
        "median TPOT ms": (figures["median_tpot_ms"], ours["latency"]["tpot_ms"]["median"]),
        "output tok/s": (figures["output_throughput"], ours["throughput"]["output_throughput"]),
    }


def assert_agree(pairs: dict[str, tuple[float, float]], tolerance: float) -> None:
    off = {k: (a, b) for k, (a, b) in pairs.items() if abs(a - b) / b > tolerance}
    assert not off, f"beyond {tolerance:.0%} of InferX's own run: {off} (all: {pairs})"
