"""``make demo``'s three commands on both real engines: one sweep on vLLM CPU and on
llama-server, one report with both, and ``inferx compare`` of the two.

Small levels (1 and 2, 16 prompts of 32/16 tokens) keep it to vLLM's start-up plus
seconds; ``make demo`` runs the same commands at the default sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferx_core.results.files import read_result

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def demo(engine_python: Path, llama_server: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "results"
    done = inferx(
        "demo", "--output", str(out), "--engine-python", str(engine_python),
        "--concurrency", "1,2", "--isl", "32", "--osl", "16", "--num-prompts", "8",
        "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def inferx(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "INFERX_DISABLE_PLUGINS": "example-tpu"}  # as `make demo`
    binary = Path(sys.executable).with_name("inferx")
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, timeout=900, env=env
    )


def test_the_same_sweep_ran_on_both_engines(demo: Path) -> None:
    shapes = {}
    for engine in ("vllm", "llamacpp"):
        points = sorted((demo / engine).glob("*-c[0-9]*.json"))
        assert len(points) == 2, points
        for path in points:
            result = read_result(path).flat()
            assert result["status"] == "ok" or result["status"] == "invalid", result
            assert result["engine"]["name"] == engine
            assert result["completed"] == 8 and result["failed"] == 0
            spec = result["workload"]["spec"]
            shapes.setdefault(engine, set()).add(
                (result["max_concurrency"], spec["isl"], spec["osl"], spec["api"])
            )
    assert (
        shapes["vllm"]
        == shapes["llamacpp"]
        == {(1, 32, 16, "completions"), (2, 32, 16, "completions")}
    )


def test_one_report_shows_both_engines(demo: Path) -> None:
    report = demo / "report"
    done = inferx("report", str(demo), "--output", str(report))
    assert done.returncode == 0, done.stderr[-3000:]
    html = next(report.glob("*.html")).read_text()
    assert "vllm" in html and "llamacpp" in html


def test_compare_puts_llama_cpp_against_vllm(demo: Path) -> None:
    done = inferx("compare", str(demo / "vllm"), str(demo / "llamacpp"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    compared = json.loads(done.stdout)
    # the two engines' points share no id: matched by scenario + load level
    assert compared["matched_by"] == "load"
    labels = sorted(p["label"] for p in compared["points"])
    assert labels == ["32/16 tp1 c1", "32/16 tp1 c2"], labels
    for point in compared["points"]:
        assert point["a_point"].startswith("demo-tiny-llama-vllm")
        assert "llamacpp" in point["b_point"]
        tput = next(m for m in point["metrics"] if m["field"] == "tput_per_gpu")
        assert tput["a"]["value"] > 0 and tput["b"]["value"] > 0
