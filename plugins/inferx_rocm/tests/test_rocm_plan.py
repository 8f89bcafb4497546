"""``inferx plan --platform`` golden launches for MI300X, MI325X and MI355X with vLLM and SGLang,
and the plugin's absence of effect on NVIDIA and CPU platforms.

Every run is the real CLI in a subprocess with the installed plugins (entry points).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
DSR1 = "deepseek-ai/DeepSeek-R1"
GPUS = "0,1,2,3,4,5,6,7"
PREFLIGHT = {
    "kind": "gpu_memory_below",
    "timeout_s": 300.0,
    "port": None,
    "threshold": 0.1,
    "path": None,
    "reason": "a half-drained previous job on these AMD GPUs breaks RCCL init",
}
UNSET = ["CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"]


def inferx(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def plan(config: Path, platform: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    proc = inferx("plan", str(config), "--platform", str(PLATFORMS / platform), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"{text.strip()}\noutput_dir: {tmp_path / 'results'}\n")
    return path


def rocm_applied(item: dict[str, Any]) -> list[str]:
    return [f["id"] for f in item["fixes_applied"] if f["id"].startswith("rocm-")]


VLLM = f"""
engine: vllm
model: {LLAMA_70B}
parallelism: {{tp: 8}}
"""
VLLM_ARGV = [
    "vllm",
    "serve",
    LLAMA_70B,
    "--host",
    "127.0.0.1",
    "--port",
    "8000",
    "--served-model-name",
    LLAMA_70B,
    "--tensor-parallel-size",
    "8",
    "--gpu-memory-utilization",
    "0.9",
    "--no-enable-prefix-caching",
    "--enable-per-request-metrics",  # the engine's own clock per request (issue 41)
    "--enable-request-id-headers",
]

SGLANG = f"""
engine: sglang
model: {DSR1}
parallelism: {{tp: 8}}
engine_args: {{chunked-prefill-size: 196608}}
"""


def sglang_argv(chunk: str) -> list[str]:
    return [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        DSR1,
        "--served-model-name",
        DSR1,
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tensor-parallel-size",
        "8",
        "--disable-radix-cache",
        "--enable-metrics",
        "--chunked-prefill-size",
        chunk,
        "--attention-backend",
        "aiter",
    ]


# platform -> (arch, mec fix applies, MI355X fixes apply)
NODES = {
    "mi300x8.json": ("gfx942", True, False),  # MEC 170 < 177
    "mi325x8.json": ("gfx942", False, False),  # MEC 177
    "mi355x8.json": ("gfx950", False, True),  # gfx950 firmware numbering
}
#: Spec fields the rocm fixes may touch; every other field must equal the launch without rocm.
ROCM_FIELDS = ("argv", "env", "unset_env", "ulimits", "devices", "preflight", "warnings")


def assert_only_rocm_changed(with_rocm: dict[str, Any], without: dict[str, Any]) -> None:
    """Everything the rocm fixes did not touch is the launch without the plugin."""
    a, b = with_rocm["spec"], without["spec"]
    assert {k: v for k, v in a.items() if k not in ROCM_FIELDS} == {
        k: v for k, v in b.items() if k not in ROCM_FIELDS
    }
    assert with_rocm["launcher"]["launcher"] == without["launcher"]["launcher"]
    others = [f for f in with_rocm["fixes_applied"] if not f["id"].startswith("rocm-")]
    assert others == without["fixes_applied"]


@pytest.mark.parametrize("node", sorted(NODES))
def test_vllm_golden_launch(tmp_path: Path, node: str) -> None:
    arch, old_mec, mi355x = NODES[node]
    config = write(tmp_path, VLLM)
    (item,) = plan(config, node)
    (base,) = plan(config, node, env={"INFERX_DISABLE_PLUGINS": "rocm"})
    assert_only_rocm_changed(item, base)
    spec = item["spec"]
    assert spec["argv"] == base["spec"]["argv"] == VLLM_ARGV  # vLLM's command is untouched
    rocm_env = {
        "ROCR_VISIBLE_DEVICES": GPUS,
        "HIP_VISIBLE_DEVICES": GPUS,
        "GPU_ARCHS": arch,
        "VLLM_ROCM_USE_AITER": "1",
    }
    if old_mec:
        rocm_env["HSA_NO_SCRATCH_RECLAIM"] = "1"
    assert spec["env"] == {**base["spec"]["env"], **rocm_env}
    assert spec["unset_env"] == [*base["spec"]["unset_env"], *UNSET]
    assert spec["ulimits"] == {**base["spec"]["ulimits"], **({"core": 0} if mi355x else {})}
    assert spec["devices"] == [] and spec["warnings"] == base["spec"]["warnings"]
    assert spec["preflight"] == [*base["spec"]["preflight"], PREFLIGHT]
    assert spec["gpu_ids"] == list(range(8))
    expected = ["rocm-visible-devices", "rocm-aiter-gpu-archs", "rocm-aiter-vllm"]
    expected += ["rocm-mi355x-no-core-dumps"] if mi355x else []
    expected += ["rocm-hsa-no-scratch-reclaim"] if old_mec else []
    expected += ["rocm-gpu-memory-preflight"]
    assert rocm_applied(item) == expected
    launcher = item["launcher"]
    assert launcher["launcher"] == "process" and launcher["argv"] == VLLM_ARGV
    assert launcher["env"] == spec["env"] and launcher["unset_env"] == spec["unset_env"]
    assert launcher["ulimits"] == spec["ulimits"]


@pytest.mark.parametrize("node", sorted(NODES))
def test_sglang_golden_launch(tmp_path: Path, node: str) -> None:
    arch, old_mec, mi355x = NODES[node]
    config = write(tmp_path, SGLANG)
    (item,) = plan(config, node)
    (base,) = plan(config, node, env={"INFERX_DISABLE_PLUGINS": "rocm"})
    assert_only_rocm_changed(item, base)
    spec = item["spec"]
    assert spec["argv"] == sglang_argv("32768" if mi355x else "196608")
    base_argv = base["spec"]["argv"]
    capped = [("32768" if mi355x and a == "196608" else a) for a in base_argv]
    assert spec["argv"] == [*capped, "--attention-backend", "aiter"]
    rocm_env = {
        "ROCR_VISIBLE_DEVICES": GPUS,
        "HIP_VISIBLE_DEVICES": GPUS,
        "GPU_ARCHS": arch,
        "SGLANG_USE_AITER": "1",
    }
    if old_mec:
        rocm_env["HSA_NO_SCRATCH_RECLAIM"] = "1"
    assert spec["env"] == {**base["spec"]["env"], **rocm_env}
    assert spec["unset_env"] == [*base["spec"]["unset_env"], *UNSET]
    assert spec["ulimits"] == {**base["spec"]["ulimits"], **({"core": 0} if mi355x else {})}
    assert spec["preflight"] == [*base["spec"]["preflight"], PREFLIGHT]
    expected = ["rocm-visible-devices", "rocm-aiter-gpu-archs", "rocm-aiter-sglang"]
    expected += ["rocm-mi355x-chunked-prefill-cap", "rocm-mi355x-no-core-dumps"] if mi355x else []
    expected += ["rocm-hsa-no-scratch-reclaim"] if old_mec else []
    expected += ["rocm-gpu-memory-preflight"]
    assert rocm_applied(item) == expected
    why = {f["id"]: f["why"] for f in item["fixes_applied"]}
    assert f"{arch}:sramecc+:xnack-" in why["rocm-aiter-gpu-archs"]
    if mi355x:
        cap = next(f for f in item["fixes_applied"] if f["id"] == "rocm-mi355x-chunked-prefill-cap")
        assert cap["why"] == "--chunked-prefill-size 196608 > 32768 on gfx950 crashes the engine"
        assert "196608" in cap["changes"]["argv"]["from"]
        assert "32768" in cap["changes"]["argv"]["to"]
    else:
        not_applied = {f["id"]: f["reason"] for f in item["fixes_not_applied"]}
        assert not_applied["rocm-mi355x-chunked-prefill-cap"] == (
            "no gfx950 (MI350X/MI355X) GPU in this launch"
        )


def test_docker_launch_on_mi300x(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        f"""
engine: vllm
model: {LLAMA_70B}
parallelism: {{tp: 4}}
gpu_ids: [4, 5, 6, 7]
launcher: docker
image: rocm/vllm:latest
""",
    )
    (item,) = plan(config, "mi300x8.json")
    argv = item["launcher"]["argv"]
    run_dir = (tmp_path / "results" / "servers" / item["server"]).resolve()
    head = ["docker", "run", "--rm", "--init", "--name", "inferx-vllm-8000", "--label"]
    head.append("inferx.launch=<id of each start>")  # each start's own id
    devices = ["--device", "/dev/kfd", "--device", "/dev/dri"]
    assert argv[: len(head) + len(devices)] == head + devices
    assert "--gpus" not in argv
    assert argv[argv.index("--ipc") : argv.index("--ipc") + 2] == ["--ipc", "host"]
    assert f"{run_dir}:/inferx/run" in argv
    env_names = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert env_names == sorted(
        [
            "GPU_ARCHS",
            "HIP_VISIBLE_DEVICES",
            "HSA_NO_SCRATCH_RECLAIM",
            "ROCR_VISIBLE_DEVICES",
            "VLLM_ROCM_USE_AITER",
        ]
    )
    assert item["spec"]["env"]["ROCR_VISIBLE_DEVICES"] == "4,5,6,7"
    assert item["spec"]["env"]["HIP_VISIBLE_DEVICES"] == "0,1,2,3"
    assert argv[-len(VLLM_ARGV) :][0:3] == ["vllm", "serve", LLAMA_70B]
    assert "rocm-docker-devices" in rocm_applied(item)
    if "docker_args" in item["spec"]:  # the LaunchSpec field the lead adds
        joined = " ".join(argv)
        for pair in (
            "--group-add video",
            "--cap-add SYS_PTRACE",
            "--security-opt seccomp=unconfined",
        ):
            assert pair in joined
    else:
        (warning,) = item["spec"]["warnings"]
        assert "--group-add video --cap-add SYS_PTRACE --security-opt seccomp=unconfined" in warning


def test_text_plan_shows_the_rocm_fixes(tmp_path: Path) -> None:
    proc = inferx(
        "plan", str(write(tmp_path, SGLANG)), "--platform", str(PLATFORMS / "mi355x8.json")
    )
    assert proc.returncode == 0, proc.stderr
    assert "--chunked-prefill-size 32768 --attention-backend aiter" in proc.stdout
    assert "env GPU_ARCHS=gfx950" in proc.stdout
    assert "fix rocm-mi355x-chunked-prefill-cap" in proc.stdout


def test_bad_rocm_plugin_option_exits_2_with_the_reason(tmp_path: Path) -> None:
    config = write(tmp_path, VLLM + "plugin_options: {rocm: {aitre: false}}")
    proc = inferx("plan", str(config), "--platform", str(PLATFORMS / "mi300x8.json"), "--json")
    assert proc.returncode == 2, proc.stderr
    assert "plugin_options.rocm.aitre: unknown option; known: aiter" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- no effect without AMD GPUs -----------------------------------------------------------------

ENGINES = {
    "vllm": VLLM,
    "sglang": SGLANG,
    "trtllm": "engine: trtllm\nmodel: nvidia/DeepSeek-R1-FP4\nparallelism: {tp: 8, ep: 8}",
}


@pytest.mark.parametrize("node", ["h200x8.json", "b200x8.json", "cpu.json"])
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_no_effect_on_nvidia_or_cpu(tmp_path: Path, node: str, engine: str) -> None:
    config = write(tmp_path, ENGINES[engine])
    with_rocm = plan(config, node)
    without = plan(config, node, env={"INFERX_DISABLE_PLUGINS": "rocm"})
    for item in with_rocm:
        considered = [f for f in item["fixes_not_applied"] if f["id"].startswith("rocm-")]
        assert len(considered) == 9  # the catalogue is listed and explained...
        assert {f["reason"] for f in considered} == {"no AMD GPU on this platform"}
        item["fixes_not_applied"] = [f for f in item["fixes_not_applied"] if f not in considered]
        assert not rocm_applied(item)
    assert with_rocm == without  # ...and changes nothing else
