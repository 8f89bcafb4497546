"""``inferx plan``: the exact launch per server for a described platform, nothing started.

Platform files under tests/platforms/ stand for real nodes (H100/H200/B200/
GB200, MI300X/MI325X/MI355X, a CPU laptop), so the launches for hardware
this machine does not have can be reviewed as data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from inferx_core.config.models import RunConfig
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import load_platform

PLATFORMS = Path(__file__).parents[2] / "platforms"
SECRET = "hf_plan_secret_7"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def inferx(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def plan_json(config: Path, platform: str) -> list[dict[str, Any]]:
    proc = inferx("plan", str(config), "--platform", str(PLATFORMS / platform), "--json")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(f"{text.strip()}\noutput_dir: {tmp_path / 'results'}\n")
    return path


def write_sweep(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text.strip().replace("OUTPUT", str(tmp_path / "results")) + "\n")
    return path


# -- platform files ----------------------------------------------------------------------------
EXPECTED_PLATFORMS = {
    "h100x8.json": ("nvidia", 8, "sm_90", "9.0"),
    "h200x8.json": ("nvidia", 8, "sm_90", "9.0"),
    "b200x8.json": ("nvidia", 8, "sm_100", "10.0"),
    "gb200x4.json": ("nvidia", 4, "sm_100", "10.0"),
    "mi300x8.json": ("amd", 8, "gfx942", None),
    "mi325x8.json": ("amd", 8, "gfx942", None),
    "mi355x8.json": ("amd", 8, "gfx950", None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PLATFORMS))
def test_platform_files_describe_their_node(name: str) -> None:
    vendor, count, arch, cc = EXPECTED_PLATFORMS[name]
    platform = load_platform(PLATFORMS / name)
    assert platform.vendors == (vendor,)
    assert platform.gpu_count == count
    assert [a.index for a in platform.accelerators] == list(range(count))
    for acc in platform.accelerators:
        assert acc.arch == arch
        assert acc.compute_capability == cc
        assert acc.memory_total_mib and acc.driver_version and acc.runtime_version
        if vendor == "amd":
            assert acc.arch_full == f"{arch}:sramecc+:xnack-"
            assert acc.firmware.get("mec")
    assert platform.host is not None
    if vendor == "nvidia":
        assert {"nccl", "cuda"} <= set(platform.software)
    else:
        assert "rocm" in platform.software


def test_platform_details_that_fixes_key_on() -> None:
    h200 = load_platform(PLATFORMS / "h200x8.json")
    assert h200.accelerators[0].memory_total_mib // 1024 == 140  # 141 GB
    b200 = load_platform(PLATFORMS / "b200x8.json")
    # SM100 with NCCL older than 2.26.2: the combination the NCCL SM100 fix targets.
    assert b200.accelerators[0].compute_capability_major == 10
    assert b200.software["nccl"] == "2.21.5"
    mi300 = load_platform(PLATFORMS / "mi300x8.json")
    assert mi300.accelerators[0].firmware == {"mec": "170"}
    cpu = load_platform(PLATFORMS / "cpu.json")
    assert cpu.is_cpu_only and cpu.host is not None and cpu.host.cpu_logical_cores


@pytest.fixture(scope="module")
def pm() -> Any:
    return get_plugin_manager(env={})


@pytest.mark.parametrize("name", sorted(EXPECTED_PLATFORMS))
def test_vllm_uses_the_first_tp_gpus_of_every_platform(pm: Any, name: str) -> None:
    from inferx_core.cli.run import plan

    platform = load_platform(PLATFORMS / name)
    cfg = RunConfig(engine="vllm", model="m", parallelism={"tp": 4})
    (item,) = plan([cfg], pm, platform)
    assert item["spec"]["gpu_ids"] == [0, 1, 2, 3]
    assert item["num_gpus"] == 4
    assert "--gpu-memory-utilization" in item["spec"]["argv"]


# -- vLLM ----------------------------------------------------------------------------------------
def test_vllm_tp8_on_h200_exact_launch(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        f"""
engine: vllm
model: {LLAMA_70B}
parallelism: {{tp: 8}}
engine_env: {{HF_TOKEN: {SECRET}}}
load: {{concurrency: [1, 8]}}
plugin_options: {{nvidia: {{cache_dir: {tmp_path / "cache"}}}}}
""",
    )
    (item,) = plan_json(config, "h200x8.json")
    run_dir = (tmp_path / "results" / "servers" / item["server"]).resolve()
    # The NVIDIA fixes that hold on an 8-GPU H200 (docs/fixes.md): the prefetch wrapper
    # in front of the engine, and the environment below.
    wrapper = ["python3", "{run_dir}/inferx_flashinfer_prefetch.py", "--timeout", "900", "--"]
    argv = [
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
        "--enable-per-request-metrics",  # the engine's own clock (inferx_vllm.server_timing)
        "--enable-request-id-headers",
    ]
    assert item["spec"]["argv"] == wrapper + argv
    assert item["launcher"]["launcher"] == "process"
    assert item["launcher"]["argv"] == [
        "python3",
        f"{run_dir}/inferx_flashinfer_prefetch.py",
        *wrapper[2:],
        *argv,
    ]
    assert item["spec"]["gpu_ids"] == list(range(8))
    assert item["num_gpus"] == 8
    assert item["spec"]["env"] == {
        "HF_TOKEN": "***",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FLASHINFER_CUDA_ARCH_LIST": "9.0a",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "FLASHINFER_WORKSPACE_BASE": str(tmp_path / "cache" / "flashinfer"),
    }
    assert item["server"] == "Llama-3.1-70B-Instruct-vllm-tp8"
    assert item["engine"] == item["plugin"] == "vllm"
    assert item["port"] == 8000 and item["port_note"] == "picked free at run time"
    assert item["points"] == [
        "Llama-3.1-70B-Instruct-vllm-tp8-completions-isl1024-osl1024-c1",
        "Llama-3.1-70B-Instruct-vllm-tp8-completions-isl1024-osl1024-c8",
    ]
    assert item["launcher"]["log"] == str(
        tmp_path / "results" / "servers" / item["server"] / "engine.log"
    )


def test_vllm_on_cpu_has_no_gpu_memory_flag_and_no_gpus(tmp_path: Path) -> None:
    config = write(tmp_path, "engine: vllm\nmodel: Qwen/Qwen2.5-0.5B-Instruct\nport: 8123")
    (item,) = plan_json(config, "cpu.json")
    argv = item["spec"]["argv"]
    assert "--gpu-memory-utilization" not in argv
    assert argv[argv.index("--port") + 1] == "8123"
    assert item["port"] == 8123 and item["port_note"] is None
    assert item["spec"]["gpu_ids"] == []
    assert item["num_gpus"] == 0


# -- SGLang, TensorRT-LLM ------------------------------------------------------------------------
def test_sglang_dp_attention_on_mi300x_exact_launch(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        """
engine: sglang
model: deepseek-ai/DeepSeek-R1
parallelism: {tp: 8, dp: 8, dp_attention: true}
max_num_seqs: 512
""",
    )
    (item,) = plan_json(config, "mi300x8.json")
    assert item["spec"]["argv"] == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "deepseek-ai/DeepSeek-R1",
        "--served-model-name",
        "deepseek-ai/DeepSeek-R1",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tensor-parallel-size",
        "8",
        "--attn-dp-size",
        "8",
        "--max-running-requests",
        "512",
        "--disable-radix-cache",
        "--enable-metrics",
        # inferx-rocm's AITER switch for SGLang on MI3xx
        "--attention-backend",
        "aiter",
    ]
    assert item["port"] == 30000  # SGLang's default port
    assert item["spec"]["gpu_ids"] == list(range(8))
    assert item["num_gpus"] == 8
    assert item["server"] == "DeepSeek-R1-sglang-tp8-dp8"


def test_trtllm_on_b200_drops_mpi_environment(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        """
engine: trtllm
model: nvidia/DeepSeek-R1-FP4
parallelism: {tp: 8, ep: 8}
""",
    )
    (item,) = plan_json(config, "b200x8.json")
    assert item["spec"]["unset_env"] == ["SLURM_*", "PMI*", "PMIX_*", "OMPI_*"]
    assert item["launcher"]["unset_env"] == item["spec"]["unset_env"]
    argv = item["spec"]["argv"]
    assert argv[:4] == ["trtllm-serve", "nvidia/DeepSeek-R1-FP4", "--backend", "pytorch"]
    assert argv[argv.index("--tp_size") + 1] == "8"
    assert argv[argv.index("--ep_size") + 1] == "8"
    assert item["spec"]["gpu_ids"] == list(range(8))
    # The text plan shows it too.
    proc = inferx("plan", str(config), "--platform", str(PLATFORMS / "b200x8.json"))
    assert proc.returncode == 0, proc.stderr
    assert "unset env SLURM_* PMI* PMIX_* OMPI_*" in proc.stdout


# -- docker --------------------------------------------------------------------------------------
def test_docker_launcher_exact_argv_with_env_names_only(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        f"""
engine: vllm
model: {LLAMA_70B}
parallelism: {{tp: 8}}
launcher: docker
image: vllm/vllm-openai:v0.10.1
engine_env: {{HF_TOKEN: {SECRET}, VLLM_LOGGING_LEVEL: DEBUG}}
plugin_options: {{nvidia: {{cache_dir: {tmp_path / "cache"}}}}}
""",
    )
    (item,) = plan_json(config, "h200x8.json")
    run_dir = tmp_path / "results" / "servers" / "Llama-3.1-70B-Instruct-vllm-tp8"
    # NVIDIA fixes on an 8-GPU H200 with this image (NCCL 2.26.2, docs/fixes.md): the
    # FlashInfer cache is mounted, the engine starts through the prefetch wrapper in the
    # run folder, and the arch lists and NCCL_GRAPH_REGISTER=0 are passed by name.
    engine_argv = [
        "/inferx/run/inferx_flashinfer_prefetch.py" if a.startswith("{run_dir}") else a
        for a in item["spec"]["argv"]
    ]
    assert item["launcher"]["argv"] == [
        "docker",
        "run",
        "--rm",
        "--init",
        "--name",
        "inferx-vllm-8000",
        "--label",
        "inferx.launch=<id of each start>",
        "--gpus",
        '"device=0,1,2,3,4,5,6,7"',
        "--ipc",
        "host",
        "--shm-size",
        "16g",
        "--network",
        "host",
        "-v",
        f"{tmp_path / 'cache' / 'flashinfer'}:/inferx/cache/flashinfer",
        "-v",
        f"{run_dir.resolve()}:/inferx/run",
        "-e",
        "FLASHINFER_CUDA_ARCH_LIST",
        "-e",
        "FLASHINFER_WORKSPACE_BASE",
        "-e",
        "HF_TOKEN",
        "-e",
        "NCCL_GRAPH_REGISTER",
        "-e",
        "TORCH_CUDA_ARCH_LIST",
        "-e",
        "VLLM_LOGGING_LEVEL",
        "--label",
        "inferx.engine=vllm",
        "--label",
        f"inferx.model={LLAMA_70B}",
        "vllm/vllm-openai:v0.10.1",
        *engine_argv,
    ]
    assert item["spec"]["argv"][5:8] == ["vllm", "serve", LLAMA_70B]
    assert item["spec"]["image"] == "vllm/vllm-openai:v0.10.1"
    assert item["launcher"]["env"] == {
        "HF_TOKEN": "***",
        "VLLM_LOGGING_LEVEL": "DEBUG",
        "FLASHINFER_CUDA_ARCH_LIST": "9.0a",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "NCCL_GRAPH_REGISTER": "0",
        "FLASHINFER_WORKSPACE_BASE": "/inferx/cache/flashinfer",
    }
    assert not any(
        "=" in a and a.split("=")[0] in ("HF_TOKEN", "VLLM_LOGGING_LEVEL")
        for a in item["launcher"]["argv"]
    )


def test_docker_engine_is_reachable_through_the_published_port(tmp_path: Path) -> None:
    config = write(tmp_path, "engine: vllm\nmodel: m\nlauncher: docker\nimage: vllm/vllm-openai")
    (item,) = plan_json(config, "h200x8.json")
    docker_argv, engine_argv = item["launcher"]["argv"], item["spec"]["argv"]
    host_network = "--network" in docker_argv and "host" in docker_argv
    assert host_network or engine_argv[engine_argv.index("--host") + 1] == "0.0.0.0"


def test_sglang_dp_attention_claims_tp_gpus_only(pm: Any) -> None:
    from inferx_core.cli.run import plan
    from inferx_core.sdk.platform import Platform

    node = load_platform(PLATFORMS / "h200x8.json")
    accs = [node.accelerators[0].model_copy(update={"index": i}) for i in range(16)]
    platform = Platform(accelerators=tuple(accs), software=node.software)
    cfg = RunConfig(
        engine="sglang", model="m", parallelism={"tp": 8, "dp": 8, "dp_attention": True}
    )
    (item,) = plan([cfg], pm, platform)
    assert item["spec"]["gpu_ids"] == list(range(8))


# -- sweeps --------------------------------------------------------------------------------------
SWEEP = """
base:
  engine: vllm
  model: meta-llama/Llama-3.1-8B-Instruct
  output_dir: OUTPUT
  load: {concurrency: [4]}
matrix:
  tp: [1, 2]
  scenarios:
    - {name: chat, isl: 1024, osl: 1024}
    - {name: summarize, isl: 8192, osl: 1024}
  concurrency: [1, 8]
"""


def test_sweep_expands_to_servers_with_stable_unique_point_ids(tmp_path: Path) -> None:
    config = write_sweep(tmp_path, SWEEP)
    plans = plan_json(config, "h100x8.json")
    assert [p["server"] for p in plans] == [
        "chat-Llama-3.1-8B-Instruct-vllm-tp1",
        "summarize-Llama-3.1-8B-Instruct-vllm-tp1",
        "chat-Llama-3.1-8B-Instruct-vllm-tp2",
        "summarize-Llama-3.1-8B-Instruct-vllm-tp2",
    ]
    assert [p["spec"]["gpu_ids"] for p in plans] == [[0], [0], [0, 1], [0, 1]]
    points = [pid for p in plans for pid in p["points"]]
    assert len(points) == len(set(points)) == 8
    assert plans[1]["points"] == [
        "summarize-Llama-3.1-8B-Instruct-vllm-tp1-completions-isl8192-osl1024-c1",
        "summarize-Llama-3.1-8B-Instruct-vllm-tp1-completions-isl8192-osl1024-c8",
    ]
    again = plan_json(config, "h100x8.json")
    assert [p["points"] for p in again] == [p["points"] for p in plans]


def test_sweep_over_models_gives_each_model_its_own_point_ids(tmp_path: Path) -> None:
    config = write_sweep(
        tmp_path,
        """
base:
  engine: vllm
  model: meta-llama/Llama-3.1-8B-Instruct
  output_dir: OUTPUT
matrix:
  model: [meta-llama/Llama-3.1-8B-Instruct, Qwen/Qwen2.5-7B-Instruct]
  scenarios:
    - {name: chat, isl: 1024, osl: 1024}
""",
    )
    plans = plan_json(config, "h100x8.json")
    points = [pid for p in plans for pid in p["points"]]
    assert len(points) == len(set(points)), points


# -- errors --------------------------------------------------------------------------------------
def test_bad_platform_file_exits_2_naming_the_field(tmp_path: Path) -> None:
    config = write(tmp_path, "engine: vllm\nmodel: m")
    bad = json.loads((PLATFORMS / "h100x8.json").read_text())
    bad["accelerators"][3]["vendor"] = "nvidai"
    bad["accelerators"][5]["memroy_total_mib"] = 1
    platform = tmp_path / "bad-platform.json"
    platform.write_text(json.dumps(bad))
    proc = inferx("plan", str(config), "--platform", str(platform), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"invalid platform file {platform}" in proc.stderr
    assert "accelerators.3.vendor" in proc.stderr
    assert "accelerators.5.memroy_total_mib" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_launcher_is_refused_alike_by_plan_and_run(tmp_path: Path) -> None:
    """`inferx plan` shows the launch `inferx run` builds: an unknown launcher is an error in
    both (it was `launcher: None` in the plan), naming the field and what to set it to."""
    config = write(tmp_path, "engine: vllm\nmodel: m\nlauncher: kubernetes")
    platform = str(PLATFORMS / "h100x8.json")
    errors = set()
    for args in (("plan",), ("plan", "--json"), ("run", "--dry-run"), ("run",)):
        proc = inferx(*args, str(config), "--platform", platform)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert proc.stdout == "" or args == ("run",), (args, proc.stdout)
        errors.add(proc.stderr.strip().splitlines()[-1])
    (error,) = errors  # one message, whichever command meets it
    assert "unknown launcher 'kubernetes' in the config's `launcher` field" in error
    assert "known: docker, process" in error and "Set `launcher:` to one of them" in error
    assert not (tmp_path / "results" / "servers").exists()  # nothing was launched


def test_a_deployment_names_an_unknown_launcher_as_a_single_server_does(tmp_path: Path) -> None:
    deployment = (
        "deployment:\n  kind: wide_ep\n  roles:\n    - {role: both, replicas: 2}\n"
        "    - {role: router}\n"
    )
    config = write(tmp_path, "engine: vllm\nmodel: m\nlauncher: kubernetes\n" + deployment)
    proc = inferx("plan", str(config), "--platform", str(PLATFORMS / "h100x8.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert "unknown launcher 'kubernetes' in the config's `launcher` field" in error
    assert "Set `launcher:` to one of them" in error  # the fix, as for one server
