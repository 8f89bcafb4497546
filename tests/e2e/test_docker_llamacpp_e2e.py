"""llama-server in a real container (image inferx/llama-server, `make images`) through
``launcher: docker``: measured, its log captured, its versions read from the image, and
no container of InferX's left after any exit path (found by InferX's label, not by name).

llama-server is ready in about a second, so the exit paths are checked on it; the
vLLM image's run is tests/e2e/test_docker_vllm_e2e.py. Needs a Docker daemon and the
image: a skip naming the command elsewhere, a failure under INFERX_REQUIRE_DOCKER=1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from docker_support import LLAMA_IMAGE, inferx_containers, need_image

from inferx_core.demo.run import demo_config
from inferx_core.pipeline.server.run import run_configs
from inferx_core.results.files import read_result

pytestmark = [pytest.mark.engine, pytest.mark.slow]

N = 4


@pytest.fixture(scope="module")
def image() -> str:
    return need_image(LLAMA_IMAGE)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docker-llamacpp")


def config_for(root: Path, name: str, image: str, **update: Any):
    base = demo_config(
        output_dir=root / name, engine="llamacpp", concurrency=[1, 2], isl=32, osl=16,
        num_prompts=N, model_dir=root / "model",
    )  # fmt: skip
    docker = {"launcher": "docker", "image": image, "executable": ["llama-server"]}
    fast = {"telemetry_intervals": {"host": 0.2, "engine_metrics": 0.2}, "stop_grace_s": 5}
    return base.model_copy(update={"name": name, **docker, "max_num_seqs": None, **fast, **update})


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


@pytest.fixture(scope="module")
def sweep(image: str, root: Path):
    before = set(inferx_containers())
    config = config_for(root, "sweep", image, engine_env={"INFERX_TEST_TOKEN": "tok-s3cr3t"})
    return config, run_configs([config], progress=False), before


def test_the_sweep_runs_in_the_container_and_leaves_none(sweep) -> None:
    config, summary, before = sweep
    assert summary.ok, [o.result.failure_reason for o in summary.outcomes]
    for outcome in summary.outcomes:
        result = read_result(outcome.path).flat()
        assert result["completed"] == N and result["failed"] == 0
        launcher = result["launch"]["launcher"]
        assert launcher["launcher"] == "docker"
        assert launcher["argv"][launcher["argv"].index("--label") + 1].startswith("inferx.launch=")
        image = launcher["image"]  # read from the image before its first launch
        assert image["image"] == LLAMA_IMAGE and image["id"].startswith("sha256:")
        assert image["versions"]["llama-server"]
        assert result["engine"]["version"]  # the engine's own answer, from inside
    log = next(config.output_dir.rglob("engine.log")).read_text()
    assert "llama" in log and "listening" in log  # the container's output, captured
    assert set(inferx_containers()) <= before  # gone: removed by its label


def test_a_secret_is_passed_by_name_never_written(sweep) -> None:
    config, summary, _ = sweep
    for path in config.output_dir.rglob("*"):
        if path.is_file():
            assert "tok-s3cr3t" not in path.read_text(errors="replace"), path
    launcher = read_result(summary.outcomes[0].path).flat()["launch"]["launcher"]
    assert "INFERX_TEST_TOKEN" in launcher["argv"]  # `-e NAME`: the value is not in argv


def test_an_engine_dying_inside_fails_the_points_and_leaves_no_container(
    image: str, root: Path
) -> None:
    config = config_for(root, "dies", image, extra_argv=["--no-such-flag"])
    summary = run_configs([config], progress=False)
    assert not summary.ok
    reasons = [o.result.failure_reason for o in summary.outcomes]
    assert all("exited" in r for r in reasons), reasons
    assert "no-such-flag" in read_result(summary.outcomes[0].path).flat()["engine_log_tail"]
    assert inferx_containers() == []


def test_a_readiness_timeout_removes_the_container(image: str, root: Path) -> None:
    # sh -c 'sleep 600' never answers; the rest of the argv goes to sh as $0, $1, ...
    never = {"executable": ["sh", "-c", "sleep 600"], "readiness_timeout_s": 3}
    summary = run_configs([config_for(root, "timeout", image, **never)], progress=False)
    reasons = [o.result.failure_reason for o in summary.outcomes]
    assert all("ready" in r for r in reasons), reasons
    assert inferx_containers() == []


def test_a_taken_port_starts_no_container(
    image: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import inferx_core.sdk.helpers as helpers

    monkeypatch.setattr(helpers, "PORT_WAIT_S", 2.0)  # the preflight's wait, not 120 s
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        summary = run_configs([config_for(root, "port", image, port=port)], progress=False)
    reasons = [o.result.failure_reason for o in summary.outcomes]
    assert all("port" in r for r in reasons), reasons
    assert inferx_containers() == []


class Run:
    """``inferx run`` as a subprocess on long points, its container up."""

    def __init__(self, root: Path, name: str, image: str) -> None:
        config = config_for(root, name, image)
        data = config.model_dump(mode="json")
        data["load"].update({"duration_s": 60, "num_prompts": None})
        (root / f"{name}.json").write_text(json.dumps(data))
        argv = [sys.executable, "-m", "inferx_core.cli", "run", str(root / f"{name}.json")]
        self.out = config.output_dir
        self.proc = subprocess.Popen([*argv, "--no-progress"], stderr=subprocess.PIPE, text=True)

    def measuring(self) -> bool:
        return bool(list(self.out.rglob("engine.log"))) and bool(inferx_containers())


@pytest.mark.parametrize(
    "how", ["SIGTERM", "SIGINT twice", "SIGKILL (the watchdog removes it)"], ids=str
)
def test_every_way_inferx_ends_removes_the_container(image: str, root: Path, how: str) -> None:
    run = Run(root, how.split()[0].lower() + str(len(how)), image)
    wait_for(run.measuring, 120, "the container runs")
    time.sleep(3)  # ready and measuring
    sig = {"SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}.get(how.split()[0])
    if sig is None:
        os.kill(run.proc.pid, signal.SIGKILL)
    else:
        run.proc.send_signal(sig)
        if how.endswith("twice"):
            time.sleep(0.5)
            run.proc.send_signal(sig)
    run.proc.communicate(timeout=120)
    wait_for(lambda: inferx_containers() == [], 60, "no container of InferX's left")


def test_two_runs_at_once_on_different_ports(image: str, root: Path) -> None:
    configs = [config_for(root, f"twin{i}", image) for i in (1, 2)]
    paths = []
    for config in configs:
        path = root / f"{config.name}.json"
        path.write_text(json.dumps(config.model_dump(mode="json")))
        paths.append(path)
    argv = [sys.executable, "-m", "inferx_core.cli", "run"]
    procs = [subprocess.Popen([*argv, str(p), "--no-progress"]) for p in paths]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    ports = set()
    for config in configs:
        results = [read_result(p).flat() for p in config.output_dir.glob("*.json")]
        assert len(results) == 2 and all(r["status"] in ("ok", "invalid") for r in results)
        ports.add(results[0]["launch"]["spec"]["port"])
    assert len(ports) == 2
    assert inferx_containers() == []
