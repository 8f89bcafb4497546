"""inferx_sglang: registration, the launch_server argv, options, probes, metric names,
and golden launches (fixes applied) on the H100/H200/B200/GB200 platform files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferx_core.cli.run import plan
from inferx_core.config.models import Parallelism, RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.sdk.manager import PluginHookError, get_plugin_manager
from inferx_core.sdk.platform import Platform, load_platform
from inferx_core.sdk.registries import engine_registry
from inferx_sglang import hooks, launch

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
DSR1 = "deepseek-ai/DeepSeek-R1"
HEAD = ["python3", "-m", "sglang.launch_server"]


def server(**kw: Any) -> ServerConfig:
    kw.setdefault("engine", "sglang")
    kw.setdefault("model", DSR1)
    kw.setdefault("port", 30000)
    return ServerConfig(**kw)


def argv(**kw: Any) -> list[str]:
    return launch.build_argv(server(**kw))


def engines_pm() -> Any:
    """The three engine plugins as installed: the core asks each engine's owner only."""
    return get_plugin_manager(env={"INFERX_PLUGINS": "vllm,sglang,trtllm"})


def test_registered_through_entry_point() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "sglang"})
    entry = engine_registry(pm).get("sglang")
    assert entry.distribution == "inferx-sglang"
    assert (entry.info.default_port, entry.info.version_path) == (30000, "/get_server_info")
    assert entry.info.version_field == "version"


def test_minimal_argv() -> None:
    assert argv() == [
        *HEAD,
        "--model-path",
        DSR1,
        "--served-model-name",
        DSR1,
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tensor-parallel-size",
        "1",
        "--disable-radix-cache",
        "--enable-metrics",
    ]


def test_full_argv_order() -> None:
    got = argv(
        served_model_name="r1",
        host="0.0.0.0",
        parallelism=Parallelism(tp=8, pp=2, dp=8, dp_attention=True, ep=8),
        gpu_memory_utilization=0.85,
        max_num_seqs=512,
        max_model_len=32768,
        kv_cache_dtype="fp8_e4m3",
        dtype="bfloat16",
        plugin_options={
            "sglang": {
                "chunked_prefill_size": 16384,
                "attention_backend": "fa3",
                "cuda_graph_max_bs": 256,
                "disable_cuda_graph": True,
            }
        },
        engine_args={"schedule-policy": "lpm", "cuda_graph_bs_decode": ["1", "2", "4"]},
        extra_argv=["--log-level", "warning"],
    )
    assert got == [
        *HEAD,
        "--model-path",
        DSR1,
        "--served-model-name",
        "r1",
        "--host",
        "0.0.0.0",
        "--port",
        "30000",
        "--tensor-parallel-size",
        "8",
        "--pp-size",
        "2",
        "--attn-dp-size",
        "8",
        "--ep-size",
        "8",
        "--mem-fraction-static",
        "0.85",
        "--max-running-requests",
        "512",
        "--context-length",
        "32768",
        "--chunked-prefill-size",
        "16384",
        "--attention-backend",
        "fa3",
        "--cuda-graph-max-bs-decode",
        "256",
        "--cuda-graph-backend-decode",
        "disabled",
        "--cuda-graph-backend-prefill",
        "disabled",
        "--disable-radix-cache",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--dtype",
        "bfloat16",
        "--enable-metrics",
        "--schedule-policy",
        "lpm",
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "--log-level",
        "warning",
    ]


def test_dp_without_dp_attention_and_expert_parallel_flag() -> None:
    got = argv(parallelism=Parallelism(tp=4, dp=2, expert_parallel=True))
    assert got[got.index("--dp-size") + 1] == "2" and "--enable-dp-attention" not in got
    assert got[got.index("--ep-size") + 1] == "4"  # expert parallel across the tp ranks


def test_dp_attention_is_sglangs_attn_dp_size() -> None:
    got = argv(parallelism=Parallelism(tp=8, dp=8, dp_attention=True))
    assert got[got.index("--attn-dp-size") + 1] == "8"
    assert "--dp-size" not in got and "--enable-dp-attention" not in got  # deprecated in 0.5.23


def test_dp_attention_without_dp_is_refused_not_dropped() -> None:
    with pytest.raises(
        UserFacingError, match=r"parallelism\.dp_attention needs parallelism\.dp > 1"
    ):
        argv(parallelism=Parallelism(tp=8, dp_attention=True))


def test_prefix_caching_keeps_the_radix_cache() -> None:
    assert "--disable-radix-cache" not in argv(prefix_caching=True)


def test_engine_args_replace_what_inferx_set() -> None:
    got = argv(
        gpu_memory_utilization=0.8,
        plugin_options={"sglang": {"chunked_prefill_size": 8192}},
        engine_args={"mem_fraction_static": 0.7, "chunked-prefill-size": 4096},
    )
    assert got.count("--mem-fraction-static") == 1
    assert got[got.index("--mem-fraction-static") + 1] == "0.7"
    assert got[got.index("--chunked-prefill-size") + 1] == "4096"
    assert "--disable-radix-cache" not in argv(engine_args={"disable-radix-cache": False})
    assert argv(engine_args={"enable-metrics": True}).count("--enable-metrics") == 1


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("tp-size", "parallelism.tp"),
        ("tensor_parallel_size", "parallelism.tp"),
        ("dp", "parallelism.dp"),
        ("data-parallel-size", "parallelism.dp"),
        ("ep", "parallelism.ep"),
        ("enable-dp-attention", "parallelism.dp_attention"),
        ("port", "port"),
        ("model", "model"),
    ],
)
def test_parallelism_and_identity_flags_are_refused_in_engine_args(key: str, field: str) -> None:
    if key == "dp":  # not an SGLang spelling: passes through (SGLang itself would reject it)
        assert "--dp" in argv(engine_args={key: 2})
        return
    with pytest.raises(UserFacingError, match=f"set `{field}`"):
        argv(engine_args={key: 2})


def test_unknown_or_bad_option_names_the_option() -> None:
    with pytest.raises(UserFacingError, match=r"plugin_options.sglang.attention: unknown option"):
        argv(plugin_options={"sglang": {"attention": "fa3"}})
    with pytest.raises(UserFacingError, match=r"plugin_options.sglang.cuda_graph_max_bs"):
        argv(plugin_options={"sglang": {"cuda_graph_max_bs": 0}})
    with pytest.raises(UserFacingError, match="must be a mapping"):
        argv(plugin_options={"sglang": ["fa3"]})
    # Other plugins' options are theirs to check.
    assert argv(plugin_options={"rocm": {"aiter": False}}) == argv()


def test_launch_spec() -> None:
    node = load_platform(PLATFORMS / "h200x8.json")
    spec = hooks.inferx_engine_launch_spec(
        server=server(parallelism=Parallelism(tp=8, dp=8, dp_attention=True)), platform=node
    )
    assert spec.gpu_ids == tuple(range(8))  # DP attention lives inside the TP group
    assert spec.image is None and not spec.ipc_host and spec.shm_size is None
    (wait,) = spec.preflight
    assert (wait.kind, wait.port) == ("port_free", 30000)
    docker = hooks.inferx_engine_launch_spec(
        server=server(image="lmsysorg/sglang:v0.5.4", launcher="docker"), platform=node
    )
    assert docker.ipc_host and docker.shm_size == "32g"
    # Another engine's server never reaches this plugin.
    owner, other = engines_pm().call_first(
        "inferx_engine_launch_spec", server=server(engine="vllm"), platform=node
    )
    assert owner == "vllm" and other.engine == "vllm"


def test_readiness_probes() -> None:
    probes = hooks.inferx_engine_readiness(server=server(), spec=None)
    assert [(p.method, p.path) for p in probes] == [
        ("GET", "/health"),
        ("GET", "/v1/models"),
        ("POST", "/v1/completions"),
    ]
    assert probes[1].expect_in_body == "{served_model_name}"
    assert probes[2].json_body == {
        "model": "{served_model_name}",
        "prompt": "Hello",
        "max_tokens": 1,
    }
    owner, _ = engines_pm().call_first(
        "inferx_engine_readiness", server=server(engine="vllm"), spec=None
    )
    assert owner == "vllm"


def test_metrics_names() -> None:
    m = hooks.inferx_engine_metrics(server=server())
    assert (m.path, m.kv_cache_usage, m.requests_running, m.requests_waiting) == (
        "/metrics",
        "sglang:token_usage",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
    )
    assert m.kv_cache_usage_scale == 1.0 and m.extra["gen_throughput"] == "sglang:gen_throughput"
    owner, other = engines_pm().call_first("inferx_engine_metrics", server=server(engine="trtllm"))
    assert owner == "trtllm" and other.path == "/prometheus/metrics"


def test_metrics_map_reads_an_sglang_scrape() -> None:
    from inferx_core.telemetry.engine_metrics import map_metrics

    text = "\n".join(
        [
            "# TYPE sglang:token_usage gauge",
            'sglang:token_usage{model_name="m",dp_rank="0"} 0.25',
            'sglang:token_usage{model_name="m",dp_rank="1"} 0.5',
            "# TYPE sglang:num_running_reqs gauge",
            'sglang:num_running_reqs{model_name="m",dp_rank="0"} 3',
            'sglang:num_running_reqs{model_name="m",dp_rank="1"} 4',
            "# TYPE sglang:num_queue_reqs gauge",
            'sglang:num_queue_reqs{model_name="m",dp_rank="0"} 1',
            "# TYPE sglang:gen_throughput gauge",
            'sglang:gen_throughput{model_name="m",dp_rank="0"} 100.5',
        ]
    )
    values = map_metrics(text, hooks.inferx_engine_metrics(server=server()))
    assert values["engine.kv_cache_usage"] == 0.5
    assert values["engine.requests_running"] == 7
    assert values["engine.requests_waiting"] == 1
    assert values["engine.gen_throughput"] == 100.5
    assert values["engine.kv_used_tokens"] is None


# -- golden launches: `inferx plan --platform` on NVIDIA nodes -------------------------------------

NODES = {
    "h100x8.json": ("9.0a", "9.0"),
    "h200x8.json": ("9.0a", "9.0"),
    "b200x8.json": ("10.0a", "10.0"),
    "gb200x4.json": ("10.0a", "10.0"),
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("node", sorted(NODES))
def test_golden_launch(node: str, cache: Path, tmp_path: Path) -> None:
    platform = load_platform(PLATFORMS / node)
    tp = platform.gpu_count
    cfg = RunConfig(
        engine="sglang",
        model=DSR1,
        parallelism={"tp": tp, "dp": tp, "dp_attention": True},
        max_num_seqs=256,
        plugin_options={"sglang": {"chunked_prefill_size": 16384}},
        output_dir=tmp_path / "results",
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), platform)
    spec = item["spec"]
    ids = ",".join(str(i) for i in range(tp))
    engine = [
        *HEAD,
        "--model-path",
        DSR1,
        "--served-model-name",
        DSR1,
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
        "--tensor-parallel-size",
        str(tp),
        "--attn-dp-size",
        str(tp),
        "--max-running-requests",
        "256",
        "--chunked-prefill-size",
        "16384",
        "--disable-radix-cache",
        "--enable-metrics",
    ]
    wrapper = ["python3", "{run_dir}/inferx_flashinfer_prefetch.py", "--timeout", "900", "--"]
    assert spec["argv"] == wrapper + engine
    run_dir = (tmp_path / "results" / "servers" / item["server"]).resolve()
    assert item["launcher"]["argv"] == [
        wrapper[0],
        f"{run_dir}/inferx_flashinfer_prefetch.py",
        *wrapper[2:],
        *engine,
    ]
    flashinfer_arch, torch_arch = NODES[node]
    env = {
        "CUDA_VISIBLE_DEVICES": ids,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FLASHINFER_CUDA_ARCH_LIST": flashinfer_arch,
        "TORCH_CUDA_ARCH_LIST": torch_arch,
        "FLASHINFER_WORKSPACE_BASE": str(cache / "flashinfer"),
    }
    nccl = platform.software["nccl"]
    if node == "b200x8.json":  # NCCL 2.21.5 on Blackwell
        env |= {
            "CUDA_CACHE_PATH": str(cache / "nv-compute-cache"),
            "CUDA_CACHE_MAXSIZE": "4294967296",
            "CUDA_CACHE_DISABLE": "0",
        }
    if nccl.startswith(("2.26", "2.27")):  # GB200 file: NCCL 2.26.2 with CUDA graphs
        env["NCCL_GRAPH_REGISTER"] = "0"
    assert spec["env"] == env
    assert [w["kind"] for w in spec["preflight"]] == [
        "port_free",
        "gpu_memory_below",
        "path_unlocked",
    ]
    assert spec["gpu_ids"] == list(range(tp)) and item["num_gpus"] == tp
    assert len(spec["warnings"]) == (1 if node == "b200x8.json" else 0)


def test_bad_option_through_the_plugin_manager_names_plugin_and_option() -> None:
    pm = get_plugin_manager(env={})
    cfg = RunConfig(engine="sglang", model="m", plugin_options={"sglang": {"nope": 1}})
    with pytest.raises(PluginHookError, match=r"plugin_options\.sglang\.nope: unknown option"):
        plan([cfg], pm, Platform())
