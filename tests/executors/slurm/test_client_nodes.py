"""``client_nodes``: the load runs as srun steps of the job, records gathered and merged.

The private cluster has one node, so ``sbatch_args: --nodes=1`` keeps the job
on it and both client steps land there, beside the (fake) engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core.results.files import read_result

pytestmark = pytest.mark.slurm

TESTS = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(slurm_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The cluster's client environment with the fake engine as an installed plugin."""
    root = tmp_path_factory.mktemp("fake-plugin-clients")
    dist = root / "inferx_test_fake_engine-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: inferx-test-fake-engine\nVersion: 0.0\n"
    )
    (dist / "entry_points.txt").write_text("[inferx]\nfake = fake_engine\n")
    env = slurm_cluster.env
    env["PYTHONPATH"] = f"{root}:{TESTS}"
    return env


def test_two_client_steps_run_the_load_and_their_records_merge(
    env: dict[str, str], tmp_path: Path
) -> None:
    config = {
        "engine": "fake",
        "name": "clients",
        "model": "org/tiny-model",
        "plugin_options": {"mode": "ok", "ttft_ms": 5, "itl_ms": 1},
        "readiness_timeout_s": 30,
        "stop_grace_s": 5,
        "workload": {"isl": 16, "osl": 4},
        "load": {"concurrency": [2], "num_prompts": 8},
    }
    path = tmp_path / "clients.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "run", str(path), "--output", str(out),
         "--executor", "slurm", "--gpus-per-node", "0", "--executor-opt", "client_nodes=2",
         "--executor-opt", "sbatch_args=--nodes=1", "--wait"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result_path,) = sorted(out.glob("*.json"))
    result = read_result(result_path)
    assert result.status == "ok", result.failure_reason
    assert result.load.workers == 2 and result.load.completed == 8
    assert [w.requests for w in result.load.per_worker] == [4, 4]
    assert {w.clock for w in result.load.per_worker} == {"same_host"}
    rows = [json.loads(line) for line in result_path.with_suffix(".requests.jsonl").open()]
    assert {r["worker"] for r in rows if not r["warmup"]} == {0, 1}
    (job_dir,) = sorted((out / ".inferx-jobs").glob("slurm-*"))
    script = next(job_dir.glob("*.sbatch")).read_text()
    assert "INFERX_CLIENT_NODES=2" in script and "--nodes=3" in script
    assert len(list(job_dir.glob("load/point-*/records-*.jsonl"))) == 2  # the steps' files
    logs = "".join(p.read_text() for p in job_dir.glob("load/point-*/worker-*.log"))
    assert "Traceback" not in logs
