"""A fix, applied to a docker launch, is seen inside the real container (issue 40 item 4).

Each case plans a docker launch on a platform description that forces the fixes'
conditions (`inferx plan --platform`: a B200 node for NVIDIA's, an MI300X node for
ROCm's), starts the planned spec in the base image (``sleep`` instead of the engine,
and no GPUs or device nodes: there are none here), and reads from inside the
container with ``docker exec`` that every env variable the fixes set holds its
value, every mount exists with the host folder's owner and mode, every ulimit holds.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest
from docker_support import BASE_IMAGE, inferx_containers, need_image

from inferx_core.cli.run import plan
from inferx_core.config.models import RunConfig
from inferx_core.launch.docker import DockerLauncher
from inferx_core.launch.image import containers_labelled, docker
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import load_platform

pytestmark = [pytest.mark.engine, pytest.mark.slow]

PLATFORMS = Path(__file__).resolve().parents[1] / "platforms"
CASES = {
    "b200x8.json": {"parallelism": {"tp": 8}},  # NCCL SM100 JIT cache, FlashInfer cache
    "mi300x8.json": {},  # ROCm: AITER env, visible devices
    "h100x8.json": {"engine": "trtllm"},  # TensorRT-LLM's container ulimits
}
#: ``ulimit`` flag and unit (bytes per unit) of each docker ``--ulimit`` name.
ULIMIT_FLAGS = {
    "core": ("-c", 512),
    "nofile": ("-n", 1),
    "memlock": ("-l", 1024),
    "stack": ("-s", 1024),
}


def planned_spec(node: str, image: str, tmp_path: Path) -> tuple[LaunchSpec, list[str]]:
    where = {"output_dir": tmp_path / "results", "launcher": "docker"}
    cfg = RunConfig(
        **{"engine": "vllm", **CASES[node]}, model="m", image="vllm/vllm-openai:v0.8.5", **where
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), load_platform(PLATFORMS / node))
    spec = LaunchSpec(**item["spec"])
    # memlock=-1 needs CAP_SYS_RESOURCE, which a daemon in a sandbox may lack (this one:
    # runc "error setting rlimit type 8: operation not permitted"); a GPU node's has it.
    if resource.getrlimit(resource.RLIMIT_MEMLOCK)[1] != resource.RLIM_INFINITY:
        kept = {k: v for k, v in spec.ulimits.items() if k != "memlock"}
        spec = spec.model_copy(update={"ulimits": kept})
    # no GPUs, device nodes or the described node's CPUs here: the rest is as planned
    no_gpus = {"argv": ("sleep", "300"), "image": image, "gpu_ids": (), "devices": (), "cpus": ()}
    return spec.model_copy(update=no_gpus), [f["id"] for f in item["fixes_applied"]]


def inside(container: str, *argv: str) -> str:
    done = docker("exec", container, *argv)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("node", sorted(CASES))
def test_what_the_fixes_set_holds_inside_the_container(
    node: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = need_image(BASE_IMAGE)
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))
    spec, applied = planned_spec(node, image, tmp_path)
    assert applied and (spec.env or spec.mounts or spec.ulimits), applied
    handle = DockerLauncher().start(spec, tmp_path / "run")
    try:
        (container,) = _running(handle.launch_id)
        for name, value in spec.env.items():
            assert inside(container, "printenv", name) == value, name
        for mount in spec.mounts:
            host = os.stat(mount.host_path)
            want = f"{host.st_uid}:{host.st_gid} {host.st_mode & 0o7777:o}"
            assert inside(container, "stat", "-c", "%u:%g %a", mount.container_path) == want
        for name, value in spec.ulimits.items():
            flag, unit = ULIMIT_FLAGS[name]
            shown = inside(container, "sh", "-c", f"ulimit {flag}")
            assert shown == ("unlimited" if value < 0 else str(value // unit)), name
    finally:
        handle.stop(grace_s=2)
    assert containers_labelled(handle.launch_id) == [] and inferx_containers() == []


def _running(launch_id: str) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = containers_labelled(launch_id)
        if found and docker("exec", found[0], "true").returncode == 0:
            return found
        time.sleep(0.2)
    raise AssertionError("the container did not start within 60 s")
