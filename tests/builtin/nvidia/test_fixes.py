"""The NVIDIA fix catalogue on the platform descriptions of tests/platforms/.

Each fix is checked where it must apply (with the reason in words), where it
must not (and why not), what it changes, that the user's own settings win,
and that ``disable_fixes`` removes it. Launches are resolved exactly as
``inferx plan --platform`` resolves them (``cli_run.plan``), and a few go
through the real CLI. The property tests at the end run the whole installed
catalogue (NVIDIA, ROCm, example plugins) over every platform file.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.builtin.nvidia import fixes as nvidia
from inferx_core.cli.run import plan
from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.fixes import FixContext, apply_fixes
from inferx_core.sdk.launch_spec import LaunchSpec, Mount, PreflightWait
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform, load_platform
from inferx_core.sdk.registries import fix_catalogue

PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
NVIDIA_IDS = [
    "nvidia-visible-devices",
    "nvidia-gpu-memory-preflight",
    "nccl-sm100-jit-cache",
    "flashinfer-cuda-arch-list",
    "nccl-graph-register-off",
    "flashinfer-shared-cache",
]
LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
ALL8 = "0,1,2,3,4,5,6,7"

_PM: Any = None


def pm() -> Any:
    global _PM
    if _PM is None:
        _PM = get_plugin_manager(env={})
    return _PM


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "inferx-cache"
    monkeypatch.setenv(nvidia.CACHE_DIR_ENV, str(path))
    return path


def platform(name: str, **software: str | None) -> Platform:
    node = load_platform(PLATFORMS / name)
    if software:
        merged = {**node.software, **software}
        node = node.model_copy(
            update={"software": {k: v for k, v in merged.items() if v is not None}}
        )
    return node


def planned(node: str | Platform, **cfg: Any) -> dict[str, Any]:
    """One server's plan, as `inferx plan --platform` computes it."""
    cfg.setdefault("engine", "vllm")
    cfg.setdefault("model", LLAMA)
    cfg.setdefault("output_dir", "/tmp/inferx-results")
    target = platform(node) if isinstance(node, str) else node
    (item,) = plan([RunConfig(**cfg)], pm(), target)
    return item


def applied(item: dict[str, Any]) -> list[str]:
    return [f["id"] for f in item["fixes_applied"] if f["id"] in NVIDIA_IDS]


def why(item: dict[str, Any], fix_id: str) -> str:
    for fix in item["fixes_applied"]:
        if fix["id"] == fix_id:
            return fix["why"]
    for fix in item["fixes_not_applied"]:
        if fix["id"] == fix_id:
            return fix["reason"]
    raise AssertionError(f"{fix_id} was not considered")


# -- the catalogue -------------------------------------------------------------------------------


def test_catalogue_is_offered_by_the_builtin_nvml_plugin() -> None:
    offered = {fix.id: plugin for plugin, fix in fix_catalogue(pm())}
    assert {i: offered.get(i) for i in NVIDIA_IDS} == dict.fromkeys(NVIDIA_IDS, "inferx.nvml")


def test_every_fix_is_complete_data() -> None:
    fixes = nvidia.catalogue()
    assert [f.id for f in sorted(fixes, key=lambda f: (f.order, f.id))] == NVIDIA_IDS
    for fix in fixes:
        for field in ("title", "symptom", "condition_text", "change_text", "reference"):
            assert len(getattr(fix, field)) > 10, (fix.id, field)
        assert "nvidia" in fix.tags


# -- H100 / H200: Hopper, NCCL 2.21.5 --------------------------------------------------------------


@pytest.mark.parametrize("node", ["h100x8.json", "h200x8.json"])
def test_hopper_tp8_vllm(node: str, cache_dir: Path) -> None:
    item = planned(node, parallelism={"tp": 8})
    assert applied(item) == [
        "nvidia-visible-devices",
        "nvidia-gpu-memory-preflight",
        "flashinfer-cuda-arch-list",
        "flashinfer-shared-cache",
    ]
    spec = item["spec"]
    assert spec["env"] == {
        "CUDA_VISIBLE_DEVICES": ALL8,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FLASHINFER_CUDA_ARCH_LIST": "9.0a",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "FLASHINFER_WORKSPACE_BASE": str(cache_dir / "flashinfer"),
    }
    assert (
        why(item, "nccl-sm100-jit-cache") == "no compute capability 10.x GPU in this launch (9.0)"
    )
    assert why(item, "nccl-graph-register-off") == (
        "NCCL 2.21.5 (platform software) is outside 2.26-2.27"
    )
    assert spec["warnings"] == []
    assert spec["mounts"] == []


def test_gpu_ids_select_the_visible_devices() -> None:
    item = planned("h100x8.json", parallelism={"tp": 2}, gpu_ids=[6, 7])
    assert item["spec"]["env"]["CUDA_VISIBLE_DEVICES"] == "6,7"
    assert why(item, "nvidia-visible-devices").startswith("process launch on GPUs 6,7")


def test_gpu_memory_preflight_and_port_wait() -> None:
    item = planned("h200x8.json", parallelism={"tp": 8})
    waits = {w["kind"]: w for w in item["spec"]["preflight"]}
    assert waits["port_free"]["port"] == 8000
    gpu = waits["gpu_memory_below"]
    assert gpu["threshold"] == 0.10 and 0 < gpu["timeout_s"] <= 600
    assert "previous job" in gpu["reason"]


# -- vLLM golden launches on every NVIDIA node ----------------------------------------------------

VLLM_ENGINE_ARGV = [
    "vllm",
    "serve",
    LLAMA,
    "--host",
    "127.0.0.1",
    "--port",
    "8000",
    "--served-model-name",
    LLAMA,
    "--tensor-parallel-size",
    "4",
    "--max-num-seqs",
    "256",
    "--gpu-memory-utilization",
    "0.9",
    "--no-enable-prefix-caching",
    "--kv-cache-dtype",
    "fp8",
    "--enable-per-request-metrics",  # the engine's own clock per request (issue 41)
    "--enable-request-id-headers",
]
WRAPPER = ["python3", "{run_dir}/inferx_flashinfer_prefetch.py", "--timeout", "900", "--"]


@pytest.mark.parametrize("node", ["h100x8.json", "h200x8.json", "b200x8.json", "gb200x4.json"])
def test_vllm_golden_launch(node: str, cache_dir: Path) -> None:
    item = planned(node, parallelism={"tp": 4}, max_num_seqs=256, kv_cache_dtype="fp8")
    spec = item["spec"]
    assert spec["argv"] == WRAPPER + VLLM_ENGINE_ARGV
    blackwell = node in ("b200x8.json", "gb200x4.json")
    env = {
        "CUDA_VISIBLE_DEVICES": "0,1,2,3",
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FLASHINFER_CUDA_ARCH_LIST": "10.0a" if blackwell else "9.0a",
        "TORCH_CUDA_ARCH_LIST": "10.0" if blackwell else "9.0",
        "FLASHINFER_WORKSPACE_BASE": str(cache_dir / "flashinfer"),
    }
    if node == "b200x8.json":  # NCCL 2.21.5 on SM100
        env |= {
            "CUDA_CACHE_PATH": str(cache_dir / "nv-compute-cache"),
            "CUDA_CACHE_MAXSIZE": "4294967296",
            "CUDA_CACHE_DISABLE": "0",
        }
    if node == "gb200x4.json":  # NCCL 2.26.2 with CUDA graphs
        env["NCCL_GRAPH_REGISTER"] = "0"
    assert spec["env"] == env
    assert spec["gpu_ids"] == [0, 1, 2, 3]
    assert [w["kind"] for w in spec["preflight"]] == [
        "port_free",
        "gpu_memory_below",
        "path_unlocked",
    ]
    assert len(spec["warnings"]) == (node == "b200x8.json")
    assert spec["files"] == {nvidia.PREFETCH_SCRIPT: nvidia.prefetch_source()}
    assert spec["mounts"] == [] and spec["unset_env"] == []


# -- B200 / GB200: Blackwell -----------------------------------------------------------------------


def test_b200_with_old_nccl_persists_the_jit_cache_and_warns(cache_dir: Path) -> None:
    item = planned("b200x8.json", parallelism={"tp": 8})
    assert "nccl-sm100-jit-cache" in applied(item)
    assert why(item, "nccl-sm100-jit-cache") == (
        "compute capability 10.0 with NCCL 2.21.5 (platform software) < 2.26.2"
    )
    env = item["spec"]["env"]
    assert env["CUDA_CACHE_PATH"] == str(cache_dir / "nv-compute-cache")
    assert env["CUDA_CACHE_MAXSIZE"] == "4294967296"
    assert env["CUDA_CACHE_DISABLE"] == "0"
    assert env["FLASHINFER_CUDA_ARCH_LIST"] == "10.0a"
    assert env["TORCH_CUDA_ARCH_LIST"] == "10.0"
    (warning,) = item["spec"]["warnings"]
    assert "30 minutes" in warning and str(cache_dir / "nv-compute-cache") in warning
    assert "raise it to at least 3600" in warning  # default readiness_timeout_s is 1800


def test_no_readiness_hint_when_the_timeout_is_long_enough() -> None:
    item = planned("b200x8.json", parallelism={"tp": 8}, readiness_timeout_s=7200)
    (warning,) = item["spec"]["warnings"]
    assert "readiness_timeout_s" not in warning


def test_gb200_nccl_2_26_2_needs_no_jit_cache_but_no_graph_registration() -> None:
    item = planned("gb200x4.json", parallelism={"tp": 4})
    assert why(item, "nccl-sm100-jit-cache") == (
        "NCCL 2.26.2 (platform software) >= 2.26.2 carries SM100 code"
    )
    assert "nccl-graph-register-off" in applied(item)
    assert why(item, "nccl-graph-register-off") == (
        "NCCL 2.26.2 (platform software) with CUDA graphs (CUDA graphs on (the engine's "
        "default)) registers user buffers"
    )
    assert item["spec"]["env"]["NCCL_GRAPH_REGISTER"] == "0"
    assert "CUDA_CACHE_PATH" not in item["spec"]["env"]


def test_unknown_nccl_on_blackwell_applies_with_the_reason() -> None:
    node = platform("b200x8.json", nccl=None)
    item = planned(node, parallelism={"tp": 8})
    assert why(item, "nccl-sm100-jit-cache") == (
        "compute capability 10.0 with NCCL version unknown (no `nccl` in the platform's "
        "software versions)"
    )
    assert why(item, "nccl-graph-register-off").startswith("NCCL version unknown")


@pytest.mark.parametrize(
    ("nccl", "expected"), [("2.25.1", True), ("2.26.1", True), ("2.26.2", False), ("2.28.3", False)]
)
def test_sm100_threshold(nccl: str, expected: bool) -> None:
    item = planned(platform("b200x8.json", nccl=nccl), parallelism={"tp": 2})
    assert ("nccl-sm100-jit-cache" in applied(item)) is expected


@pytest.mark.parametrize(
    ("nccl", "expected"),
    [("2.25.1", False), ("2.26.2", True), ("2.27.7", True), ("2.28.3", False), ("3.0.0", False)],
)
def test_graph_register_range(nccl: str, expected: bool) -> None:
    item = planned(platform("h100x8.json", nccl=nccl), parallelism={"tp": 2})
    assert ("nccl-graph-register-off" in applied(item)) is expected


def test_one_gpu_creates_no_communicator() -> None:
    item = planned("b200x8.json", parallelism={"tp": 1})
    assert applied(item) == [
        "nvidia-visible-devices",
        "nvidia-gpu-memory-preflight",
        "flashinfer-cuda-arch-list",
    ]
    assert why(item, "nccl-sm100-jit-cache") == "one GPU: the engine creates no NCCL communicator"
    assert why(item, "flashinfer-shared-cache") == "one GPU: one process downloads, nothing races"


# -- containers ------------------------------------------------------------------------------------


def test_docker_image_with_known_old_nccl_mounts_the_caches(cache_dir: Path) -> None:
    item = planned(
        "b200x8.json",
        parallelism={"tp": 8},
        launcher="docker",
        image="docker.io/vllm/vllm-openai:v0.8.5",
    )
    assert why(item, "nccl-sm100-jit-cache") == (
        "compute capability 10.0 with NCCL 2.21.5 (image docker.io/vllm/vllm-openai:v0.8.5, "
        "known-images table) < 2.26.2"
    )
    assert why(item, "nvidia-visible-devices") == (
        "container launch: docker --gpus selects the devices"
    )
    spec = item["spec"]
    assert spec["env"]["CUDA_CACHE_PATH"] == "/inferx/cache/nv-compute-cache"
    assert spec["env"]["FLASHINFER_WORKSPACE_BASE"] == "/inferx/cache/flashinfer"
    assert "CUDA_VISIBLE_DEVICES" not in spec["env"]
    assert spec["mounts"] == [
        {
            "host_path": str(cache_dir / "nv-compute-cache"),
            "container_path": "/inferx/cache/nv-compute-cache",
            "read_only": False,
        },
        {
            "host_path": str(cache_dir / "flashinfer"),
            "container_path": "/inferx/cache/flashinfer",
            "read_only": False,
        },
    ]
    argv = item["launcher"]["argv"]
    assert f"{cache_dir / 'nv-compute-cache'}:/inferx/cache/nv-compute-cache" in argv
    assert argv[argv.index("--gpus") + 1] == '"device=0,1,2,3,4,5,6,7"'
    image_at = argv.index("docker.io/vllm/vllm-openai:v0.8.5")
    assert argv[image_at + 1 : image_at + 3] == ["python3", "/inferx/run/" + nvidia.PREFETCH_SCRIPT]
    lock = next(w for w in spec["preflight"] if w["kind"] == "path_unlocked")
    assert lock["path"] == str(cache_dir / "flashinfer" / ".inferx-flashinfer.lock")


def test_docker_image_with_fixed_nccl() -> None:
    item = planned(
        "b200x8.json", parallelism={"tp": 8}, launcher="docker", image="vllm/vllm-openai:v0.10.2"
    )
    assert why(item, "nccl-sm100-jit-cache") == (
        "NCCL 2.27.3 (image vllm/vllm-openai:v0.10.2, known-images table) >= 2.26.2 carries "
        "SM100 code"
    )
    assert "nccl-graph-register-off" in applied(item)  # 2.27.3 leaks under CUDA graphs


def test_unknown_image_ignores_the_host_nccl() -> None:
    item = planned(
        platform("b200x8.json", nccl="2.28.3"),
        parallelism={"tp": 8},
        launcher="docker",
        image="registry.example.com/team/vllm:custom",
    )
    assert why(item, "nccl-sm100-jit-cache") == (
        "compute capability 10.0 with NCCL version unknown (image "
        "registry.example.com/team/vllm:custom is not in the known-images table; the host's "
        "NCCL does not apply inside a container)"
    )


def test_nccl_version_option_overrides_everything() -> None:
    item = planned(
        "b200x8.json",
        parallelism={"tp": 8},
        launcher="docker",
        image="registry.example.com/team/vllm:custom",
        plugin_options={"nvidia": {"nccl_version": "2.27.5"}},
    )
    assert why(item, "nccl-sm100-jit-cache") == (
        "NCCL 2.27.5 (plugin_options.nvidia.nccl_version) >= 2.26.2 carries SM100 code"
    )
    assert "nccl-graph-register-off" in applied(item)


def test_cache_dir_option(tmp_path: Path) -> None:
    item = planned(
        "b200x8.json",
        parallelism={"tp": 8},
        plugin_options={"nvidia": {"cache_dir": str(tmp_path / "shared")}},
    )
    env = item["spec"]["env"]
    assert env["CUDA_CACHE_PATH"] == str(tmp_path / "shared" / "nv-compute-cache")
    assert env["FLASHINFER_WORKSPACE_BASE"] == str(tmp_path / "shared" / "flashinfer")


def test_bad_nvidia_option_is_the_users_to_fix() -> None:
    with pytest.raises(UserFacingError, match=r"plugin_options.nvidia.cache: unknown option"):
        planned("b200x8.json", parallelism={"tp": 8}, plugin_options={"nvidia": {"cache": "/x"}})
    with pytest.raises(UserFacingError, match=r"nccl_version must be str"):
        planned("b200x8.json", plugin_options={"nvidia": {"nccl_version": 2.27}})


# -- CUDA graphs and engines -----------------------------------------------------------------------


def test_graph_register_not_without_cuda_graphs() -> None:
    node = platform("h100x8.json", nccl="2.27.3")
    eager = planned(node, parallelism={"tp": 2}, engine_args={"enforce-eager": True})
    assert why(eager, "nccl-graph-register-off") == "--enforce-eager: no CUDA graphs"
    sglang = planned(
        node,
        engine="sglang",
        parallelism={"tp": 2},
        plugin_options={"sglang": {"disable_cuda_graph": True}},
    )
    assert why(sglang, "nccl-graph-register-off") == (
        "--cuda-graph-backend-decode disabled and --cuda-graph-backend-prefill disabled: "
        "no CUDA graphs"
    )
    decode_only = planned(
        node,
        engine="sglang",
        parallelism={"tp": 2},
        engine_args={"cuda-graph-backend-decode": "disabled"},
    )
    assert decode_only["spec"]["env"]["NCCL_GRAPH_REGISTER"] == "0"  # prefill graphs remain
    old_flag = planned(
        node, engine="sglang", parallelism={"tp": 2}, engine_args={"disable-cuda-graph": True}
    )
    assert why(old_flag, "nccl-graph-register-off") == "--disable-cuda-graph: no CUDA graphs"
    trt = planned(
        node,
        engine="trtllm",
        parallelism={"tp": 2},
        plugin_options={"trtllm": {"cuda_graphs": False}},
    )
    assert why(trt, "nccl-graph-register-off") == (
        "extra_llm_api_options.yaml sets cuda_graph_config: null"
    )
    trt_graphs = planned(node, engine="trtllm", parallelism={"tp": 2})
    assert trt_graphs["spec"]["env"]["NCCL_GRAPH_REGISTER"] == "0"


def test_trtllm_gets_the_arch_list_but_no_flashinfer_prefetch() -> None:
    item = planned(
        "b200x8.json",
        engine="trtllm",
        model="nvidia/DeepSeek-R1-FP4",
        parallelism={"tp": 8, "ep": 8},
    )
    assert "flashinfer-cuda-arch-list" in applied(item)
    assert why(item, "flashinfer-shared-cache") == (
        "engine trtllm does not download FlashInfer kernels"
    )
    assert item["spec"]["argv"][0] == "trtllm-serve"


def test_sglang_tp8_on_h200_golden() -> None:
    item = planned(
        "h200x8.json", engine="sglang", model="deepseek-ai/DeepSeek-R1", parallelism={"tp": 8}
    )
    argv = item["spec"]["argv"]
    assert argv[:5] == [
        "python3",
        "{run_dir}/inferx_flashinfer_prefetch.py",
        "--timeout",
        "900",
        "--",
    ]
    assert argv[5:8] == ["python3", "-m", "sglang.launch_server"]
    assert applied(item) == [
        "nvidia-visible-devices",
        "nvidia-gpu-memory-preflight",
        "flashinfer-cuda-arch-list",
        "flashinfer-shared-cache",
    ]


# -- the user's settings win, and disable_fixes ----------------------------------------------------


def test_engine_env_wins() -> None:
    item = planned(
        "b200x8.json",
        parallelism={"tp": 2},
        engine_env={
            "CUDA_VISIBLE_DEVICES": "4,5",
            "TORCH_CUDA_ARCH_LIST": "10.0a",
            "CUDA_CACHE_PATH": "/scratch/cc",
            "NCCL_GRAPH_REGISTER": "1",
            "FLASHINFER_WORKSPACE_BASE": "/scratch/fi",
        },
    )
    env = item["spec"]["env"]
    assert env["CUDA_VISIBLE_DEVICES"] == "4,5" and "CUDA_DEVICE_ORDER" not in env
    assert why(item, "nvidia-visible-devices") == (
        "CUDA_VISIBLE_DEVICES=4,5 set in engine_env; left as given"
    )
    assert env["TORCH_CUDA_ARCH_LIST"] == "10.0a" and env["FLASHINFER_CUDA_ARCH_LIST"] == "10.0a"
    assert env["CUDA_CACHE_PATH"] == "/scratch/cc" and item["spec"]["mounts"] == []
    assert "/scratch/cc" in item["spec"]["warnings"][0]
    assert why(item, "flashinfer-shared-cache") == (
        "FLASHINFER_WORKSPACE_BASE=/scratch/fi set in env; left as given"
    )
    assert item["spec"]["argv"][:2] == ["vllm", "serve"]


@pytest.mark.parametrize("fix_id", NVIDIA_IDS)
def test_each_fix_can_be_disabled(fix_id: str) -> None:
    node = platform("b200x8.json", nccl="2.26.1")
    full = planned(node, parallelism={"tp": 8})
    assert fix_id in applied(full) or fix_id == "nccl-graph-register-off"
    without = planned(node, parallelism={"tp": 8}, disable_fixes=[fix_id])
    assert fix_id not in applied(without)
    assert why(without, fix_id) == "disabled in config"
    assert applied(without) == [i for i in applied(full) if i != fix_id]


# -- no effect without NVIDIA GPUs -----------------------------------------------------------------


@pytest.mark.parametrize("node", ["mi300x8.json", "mi355x8.json", "cpu.json"])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_nothing_applies_without_nvidia_gpus(node: str, engine: str) -> None:
    item = planned(node, engine=engine, parallelism={"tp": 8} if node != "cpu.json" else {})
    assert applied(item) == []
    reason = "no NVIDIA GPU on this platform"
    assert {why(item, i) for i in NVIDIA_IDS} == {reason}


# -- the real CLI ----------------------------------------------------------------------------------


def test_inferx_plan_cli_on_b200(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        f"engine: vllm\nmodel: {LLAMA}\nparallelism: {{tp: 8}}\noutput_dir: {tmp_path / 'out'}\n"
    )
    env = {**os.environ, nvidia.CACHE_DIR_ENV: str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferx_core.cli",
            "plan",
            str(config),
            "--platform",
            str(PLATFORMS / "b200x8.json"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    (item,) = json.loads(proc.stdout)
    assert applied(item) == [
        "nvidia-visible-devices",
        "nvidia-gpu-memory-preflight",
        "nccl-sm100-jit-cache",
        "flashinfer-cuda-arch-list",
        "flashinfer-shared-cache",
    ]
    run_dir = (tmp_path / "out" / "servers" / item["server"]).resolve()
    assert item["launcher"]["argv"][:2] == ["python3", f"{run_dir}/inferx_flashinfer_prefetch.py"]
    assert item["spec"]["files"][nvidia.PREFETCH_SCRIPT] == nvidia.prefetch_source()
    assert item["spec"]["env"]["CUDA_CACHE_PATH"] == str(tmp_path / "cache" / "nv-compute-cache")


# -- helpers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.26.2", (2, 26, 2)),
        ("2.27.3+cuda12.9", (2, 27, 3)),
        ("v2.21.5", (2, 21, 5)),
        ("2.28", (2, 28)),
        ("", None),
        (None, None),
        ("unknown", None),
    ],
)
def test_parse_version(text: str | None, expected: tuple[int, ...] | None) -> None:
    assert nvidia.parse_version(text) == expected


@pytest.mark.parametrize(
    ("cc", "flashinfer"),
    [
        ((9, 0), "9.0a"),
        ((10, 0), "10.0a"),
        ((10, 3), "10.3a"),
        ((12, 0), "12.0a"),
        ((12, 1), "12.0a"),
        ((8, 9), "8.9"),
        ((8, 0), "8.0"),
    ],
)
def test_flashinfer_arch_spelling(cc: tuple[int, int], flashinfer: str) -> None:
    assert nvidia.flashinfer_arch(*cc) == flashinfer


def test_normalize_image() -> None:
    assert nvidia.normalize_image("docker.io/vllm/vllm-openai:v0.9.2") == "vllm/vllm-openai:v0.9.2"
    assert nvidia.normalize_image("index.docker.io/vllm/vllm-openai:v0.9.2") == (
        "vllm/vllm-openai:v0.9.2"
    )
    for image, version in nvidia.KNOWN_IMAGE_NCCL.items():
        assert nvidia.parse_version(version) is not None, image


def test_cache_root_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ctx = FixContext(server=ServerConfig(engine="vllm", model="m", port=1), platform=Platform())
    monkeypatch.delenv(nvidia.CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nvidia.cache_root(ctx) == tmp_path / "xdg" / "inferx"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert nvidia.cache_root(ctx) == tmp_path / "home" / ".cache" / "inferx"


# -- properties of the whole catalogue -------------------------------------------------------------

PLATFORM_FILES = sorted(p.name for p in PLATFORMS.glob("*.json"))
USER_ENV = [
    "CUDA_VISIBLE_DEVICES",
    "TORCH_CUDA_ARCH_LIST",
    "FLASHINFER_CUDA_ARCH_LIST",
    "CUDA_CACHE_PATH",
    "NCCL_GRAPH_REGISTER",
    "FLASHINFER_WORKSPACE_BASE",
    "GPU_ARCHS",
    "HIP_VISIBLE_DEVICES",
]


@st.composite
def launches(draw: st.DrawFn) -> tuple[LaunchSpec, FixContext]:
    node = platform(draw(st.sampled_from(PLATFORM_FILES)))
    engine = draw(st.sampled_from(["vllm", "sglang", "trtllm"]))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    docker = draw(st.booleans())
    image = (
        draw(st.sampled_from([*sorted(nvidia.KNOWN_IMAGE_NCCL)[:3], "example.com/custom:1"]))
        if docker
        else None
    )
    env = {k: "user" for k in draw(st.lists(st.sampled_from(USER_ENV), unique=True, max_size=3))}
    nccl = draw(st.sampled_from([None, "2.21.5", "2.26.2", "2.27.3", "2.28.3"]))
    if nccl and node.accelerators_of("nvidia"):
        node = node.model_copy(update={"software": {**node.software, "nccl": nccl}})
    engine_args: dict[str, Any] = {}
    if engine == "vllm" and draw(st.booleans()):
        engine_args["enforce-eager"] = True
    server = ServerConfig(
        engine=engine,
        model="org/model",
        port=8000,
        parallelism={"tp": tp},
        launcher="docker" if docker else "process",
        image=image,
        engine_env=env,
        engine_args=engine_args,
        readiness_timeout_s=draw(st.sampled_from([600.0, 1800.0, 7200.0])),
    )
    _, spec = pm().call_first("inferx_engine_launch_spec", server=server, platform=node)
    return spec, FixContext(server=server, platform=node)


def real_catalogue() -> list[Any]:
    return [fix for _, fix in fix_catalogue(pm())]


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(launches(), st.randoms(use_true_random=False))
def test_offer_order_does_not_matter(
    launch: tuple[LaunchSpec, FixContext], rnd: random.Random
) -> None:
    spec, ctx = launch
    fixes = real_catalogue()
    shuffled = list(fixes)
    rnd.shuffle(shuffled)
    first = apply_fixes(spec, fixes, ctx)
    second = apply_fixes(spec, shuffled, ctx)
    assert first[0] == second[0]
    assert [a.id for a in first[1]] == [a.id for a in second[1]]


@PROPERTY_SETTINGS
@given(launches())
def test_applying_twice_changes_nothing_more(launch: tuple[LaunchSpec, FixContext]) -> None:
    spec, ctx = launch
    fixes = real_catalogue()
    once, _, _ = apply_fixes(spec, fixes, ctx)
    twice, applied_again, _ = apply_fixes(once, fixes, ctx)
    assert twice == once
    assert all(a.changes == {} for a in applied_again), [
        (a.id, a.changes) for a in applied_again if a.changes
    ]


@PROPERTY_SETTINGS
@given(launches(), st.data())
def test_disabling_a_fix_removes_only_its_change(
    launch: tuple[LaunchSpec, FixContext], data: st.DataObject
) -> None:
    spec, ctx = launch
    fixes = real_catalogue()
    full, applied_all, _ = apply_fixes(spec, fixes, ctx)
    if not applied_all:
        return
    victim = data.draw(st.sampled_from(applied_all))
    part, applied_some, decisions = apply_fixes(spec, fixes, ctx, disabled=[victim.id])
    assert [a.id for a in applied_some] == [a.id for a in applied_all if a.id != victim.id]
    assert any(d.id == victim.id and d.reason == "disabled in config" for d in decisions)
    set_by_victim = set(victim.changes.get("env", {}).get("set", {}))
    for key, value in full.env.items():
        if key in set_by_victim and key not in spec.env:
            assert key not in part.env, key
        elif key not in set_by_victim:
            assert part.env.get(key) == value, key
    # Every other fix still sets the same variables to the same values.
    others = {a.id: a.changes.get("env") for a in applied_all if a.id != victim.id}
    for record in applied_some:
        assert record.changes.get("env") == others[record.id], record.id


def test_path_unlocked_wait_and_mount_are_not_duplicated() -> None:
    spec = LaunchSpec(
        engine="vllm",
        argv=("vllm", "serve", "m"),
        port=8000,
        gpu_ids=(0, 1),
        image="img",
        mounts=(Mount(host_path="/a", container_path="/b"),),
        preflight=(PreflightWait(kind="port_free", port=8000),),
    )
    ctx = FixContext(
        server=ServerConfig(engine="vllm", model="m", port=8000, launcher="docker", image="img"),
        platform=platform("h100x8.json"),
    )
    once, _, _ = apply_fixes(spec, nvidia.catalogue(), ctx)
    twice, _, _ = apply_fixes(once, nvidia.catalogue(), ctx)
    assert len(twice.mounts) == 2 and len(twice.preflight) == 3 and twice == once
