"""inferx_trtllm: registration, argv, the extra_llm_api_options YAML, the MPI/SLURM
environment, probes, metric names, and golden launches (fixes applied) on the
H100/H200/B200/GB200 platform files."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from inferx_core.cli.run import plan
from inferx_core.config.models import Parallelism, RunConfig, ServerConfig
from inferx_core.errors import UserFacingError
from inferx_core.launch.process import ProcessLauncher, free_port
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform, load_platform
from inferx_core.sdk.registries import engine_registry
from inferx_trtllm import hooks, launch

PLATFORMS = Path(__file__).resolve().parents[3] / "tests" / "platforms"
R1 = "nvidia/DeepSeek-R1-FP4"
YAML_ARG = ["--extra_llm_api_options", "{run_dir}/extra_llm_api_options.yaml"]


def server(**kw: Any) -> ServerConfig:
    kw.setdefault("engine", "trtllm")
    kw.setdefault("model", R1)
    kw.setdefault("port", 8000)
    return ServerConfig(**kw)


def spec_for(platform: Platform | None = None, **kw: Any) -> Any:
    return hooks.inferx_engine_launch_spec(server=server(**kw), platform=platform or Platform())


def api_options(spec: Any) -> dict[str, Any]:
    return yaml.safe_load(spec.files["extra_llm_api_options.yaml"])


def test_registered_through_entry_point() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "trtllm"})
    entry = engine_registry(pm).get("trtllm")
    assert entry.info.vendors == ("nvidia",)
    assert (entry.info.version_path, entry.info.version_field) == ("/version", "version")


def test_argv_and_env_scrub() -> None:
    spec = spec_for(parallelism=Parallelism(tp=4, ep=4), max_num_seqs=64)
    assert list(spec.argv) == [
        "trtllm-serve",
        R1,
        "--backend",
        "pytorch",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tp_size",
        "4",
        "--pp_size",
        "1",
        "--ep_size",
        "4",
        "--max_batch_size",
        "64",
        *YAML_ARG,
    ]
    assert spec.unset_env == ("SLURM_*", "PMI*", "PMIX_*", "OMPI_*")
    (wait,) = spec.preflight
    assert (wait.kind, wait.port) == ("port_free", 8000)


def test_every_setting_in_argv_and_yaml() -> None:
    spec = spec_for(
        parallelism=Parallelism(tp=8, pp=1, dp=8, dp_attention=True, ep=8),
        max_num_seqs=256,
        max_model_len=9216,
        gpu_memory_utilization=0.85,
        kv_cache_dtype="fp8",
        plugin_options={
            "trtllm": {
                "max_num_tokens": 8448,
                "moe_backend": "TRTLLM",
                "stream_interval": 10,
                "cuda_graph_max_batch_size": 128,
                "extra_llm_api_options": {
                    "print_iter_log": True,
                    "kv_cache_config": {"tokens_per_block": 64},
                },
            }
        },
        engine_args={"trust-remote-code": True, "log_level": "info"},
        extra_argv=["--num_postprocess_workers", "2"],
    )
    argv = list(spec.argv)
    assert argv[argv.index("--max_num_tokens") + 1] == "8448"
    assert argv[argv.index("--max_seq_len") + 1] == "9216"
    assert argv[-5:] == [
        "--trust_remote_code",
        "--log_level",
        "info",
        "--num_postprocess_workers",
        "2",
    ]
    assert api_options(spec) == {
        "kv_cache_config": {
            "enable_block_reuse": False,
            "dtype": "fp8",
            "free_gpu_memory_fraction": 0.85,
            "tokens_per_block": 64,
        },
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 128},
        "enable_attention_dp": True,
        "moe_config": {"backend": "TRTLLM"},
        "stream_interval": 10,
        "return_perf_metrics": True,
        "enable_iter_perf_stats": True,
        "print_iter_log": True,
    }
    text = spec.files["extra_llm_api_options.yaml"]
    assert text.startswith("# trtllm-serve --extra_llm_api_options, written by InferX")


def test_yaml_defaults_turn_block_reuse_off_and_graphs_follow_max_batch() -> None:
    assert api_options(spec_for(max_num_seqs=64)) == {
        "kv_cache_config": {"enable_block_reuse": False},
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 64},
        "return_perf_metrics": True,
        "enable_iter_perf_stats": True,
    }
    opts = api_options(
        spec_for(
            prefix_caching=True,
            plugin_options={
                "trtllm": {
                    "cuda_graph_batch_sizes": [8, 1, 4, 8],
                    "cuda_graph_padding": False,
                    "kv_cache_free_gpu_memory_fraction": 0.9,
                    "prometheus_metrics": False,
                }
            },
        )
    )
    assert opts == {
        "kv_cache_config": {"enable_block_reuse": True, "free_gpu_memory_fraction": 0.9},
        "cuda_graph_config": {"enable_padding": False, "batch_sizes": [1, 4, 8]},
    }
    off = api_options(spec_for(plugin_options={"trtllm": {"cuda_graphs": False}}))
    assert off["cuda_graph_config"] is None


def test_the_launcher_writes_the_yaml_it_points_to(tmp_path: Path) -> None:
    spec = spec_for(max_num_seqs=32)
    # A stand-in for trtllm-serve that prints the file given after --extra_llm_api_options.
    code = "import sys; a = sys.argv; print(open(a[a.index('--extra_llm_api_options') + 1]).read())"
    stand_in = spec.model_copy(
        update={"argv": (sys.executable, "-c", code, *spec.argv[1:]), "port": free_port()}
    )
    handle = ProcessLauncher().start(stand_in, tmp_path / "run")
    handle.proc.wait(timeout=30)
    log = (tmp_path / "run" / "engine.log").read_text()
    assert yaml.safe_load(log) == api_options(spec)
    assert (tmp_path / "run" / "extra_llm_api_options.yaml").read_text() == (
        spec.files["extra_llm_api_options.yaml"]
    )


def test_slurm_and_mpi_variables_never_reach_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "SLURM_JOB_ID": "42",
        "SLURM_PROCID": "0",
        "PMI_RANK": "0",
        "PMIX_RANK": "0",
        "OMPI_COMM_WORLD_SIZE": "8",
        "KEEP_ME": "yes",
    }.items():
        monkeypatch.setenv(name, value)
    spec = spec_for()
    code = (
        "import os; print(sorted(k for k in os.environ "
        "if k.startswith(('SLURM_', 'PMI', 'OMPI_', 'KEEP_'))))"
    )
    stand_in = spec.model_copy(update={"argv": (sys.executable, "-c", code), "port": free_port()})
    handle = ProcessLauncher().start(stand_in, tmp_path / "run")
    handle.proc.wait(timeout=30)
    assert (tmp_path / "run" / "engine.log").read_text().strip() == "['KEEP_ME']"
    assert os.environ["SLURM_JOB_ID"] == "42"  # InferX's own environment is untouched


def test_mpirun_and_inherit_modes() -> None:
    spec = spec_for(plugin_options={"trtllm": {"mpi": "mpirun"}})
    assert list(spec.argv[:6]) == [
        "mpirun",
        "-n",
        "1",
        "--oversubscribe",
        "--allow-run-as-root",
        "trtllm-serve",
    ]
    assert spec.unset_env == launch.MPI_ENV_PATTERNS
    custom = spec_for(
        plugin_options={"trtllm": {"mpi": "mpirun", "mpirun_argv": ["mpirun", "-np", "1"]}}
    )
    assert list(custom.argv[:4]) == ["mpirun", "-np", "1", "trtllm-serve"]
    inherit = spec_for(plugin_options={"trtllm": {"mpi": "inherit"}})
    assert inherit.unset_env == () and inherit.argv[0] == "trtllm-serve"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mpi": "srun"}, r"plugin_options\.trtllm\.mpi: Input should be"),
        ({"moe": "TRTLLM"}, r"plugin_options\.trtllm\.moe: unknown option; known: mpi"),
        ({"moe_backend": "trtllm"}, r"'trtllm' is not one of CUTLASS, TRTLLM"),
        ({"extra_llm_api_options": {"tensor_parallel_size": 4}}, r"set `parallelism\.tp`"),
        ({"extra_llm_api_options": {"enable_attention_dp": True}}, r"parallelism\.dp_attention"),
        ({"mpi": "mpirun", "mpirun_argv": []}, r"mpirun_argv is empty"),
        ({"kv_cache_free_gpu_memory_fraction": 1.5}, r"less than or equal to 1"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserFacingError, match=message):
        spec_for(plugin_options={"trtllm": options})


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("tp_size", "parallelism.tp"),
        ("tensor-parallel-size", "parallelism.tp"),
        ("moe_expert_parallel_size", "parallelism.ep"),
        ("port", "port"),
        ("config", "plugin_options.trtllm.extra_llm_api_options"),
        ("kv_cache_free_gpu_memory_fraction", "plugin_options.trtllm.kv_cache_free_gpu"),
        ("free_gpu_memory_fraction", "plugin_options.trtllm.kv_cache_free_gpu"),
    ],
)
def test_engine_args_that_would_break_the_accounting_are_refused(key: str, field: str) -> None:
    with pytest.raises(UserFacingError, match=f"set `{field}"):
        spec_for(engine_args={key: 1})


def test_engine_args_replace_a_flag_inferx_set() -> None:
    argv = list(spec_for(max_num_seqs=64, engine_args={"max_batch_size": 128}).argv)
    assert argv.count("--max_batch_size") == 1
    assert argv[argv.index("--max_batch_size") + 1] == "128"
    assert list(spec_for(engine_args={"backend": "_autodeploy"}).argv[2:4]) == [
        "--backend",
        "_autodeploy",
    ]


@pytest.mark.parametrize(
    ("parallelism", "message"),
    [
        (Parallelism(tp=4, dp=2), "runs one model replica"),
        (Parallelism(tp=8, dp=4, dp_attention=True), r"must equal tp \(8\)"),
    ],
)
def test_unsupported_parallelism(parallelism: Parallelism, message: str) -> None:
    with pytest.raises(UserFacingError, match=message):
        spec_for(parallelism=parallelism)


def test_expert_parallel_flag_means_ep_over_tp() -> None:
    argv = list(spec_for(parallelism=Parallelism(tp=8, expert_parallel=True)).argv)
    assert argv[argv.index("--ep_size") + 1] == "8"


def test_containers_get_nvidias_ulimits_and_ipc() -> None:
    spec = spec_for(image="nvcr.io/nvidia/tensorrt-llm/release:1.0.0", launcher="docker")
    assert spec.ipc_host and spec.ulimits == {"memlock": -1, "stack": 67108864}
    assert spec_for().ulimits == {}  # a process cannot raise its hard limits


def test_served_model_name_warning() -> None:
    (warning,) = spec_for(served_model_name="r1").warnings
    assert "no --served_model_name" in warning
    assert spec_for(served_model_name=R1).warnings == ()


def test_readiness_probes() -> None:
    probes = hooks.inferx_engine_readiness(server=server(), spec=None)
    assert [(p.method, p.path) for p in probes] == [("GET", "/health"), ("POST", "/v1/completions")]
    assert probes[1].json_body["max_tokens"] == 1
    # A vLLM server never reaches this plugin: the core asks the engine's owner only.
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm,trtllm"})
    owner, _ = pm.call_first("inferx_engine_readiness", server=server(engine="vllm"), spec=None)
    assert owner == "vllm"


def test_metrics_names_and_a_scrape() -> None:
    from inferx_core.telemetry.engine_metrics import map_metrics

    names = hooks.inferx_engine_metrics(server=server())
    assert names.path == "/prometheus/metrics"
    text = "\n".join(
        [
            "# TYPE trtllm_kv_cache_utilization gauge",
            'trtllm_kv_cache_utilization{model_name="undefined",engine_type="undefined"} 0.42',
            "# TYPE trtllm_num_requests_running gauge",
            'trtllm_num_requests_running{model_name="undefined",engine_type="undefined"} 12',
            "# TYPE trtllm_num_requests_waiting gauge",
            'trtllm_num_requests_waiting{model_name="undefined",engine_type="undefined"} 3',
            "# TYPE trtllm_generation_tokens counter",
            'trtllm_generation_tokens_total{model_name="undefined",engine_type="undefined"} 900',
        ]
    )
    values = map_metrics(text, names)
    assert values == {
        "engine.kv_cache_usage": 0.42,
        "engine.requests_running": 12,
        "engine.requests_waiting": 3,
        "engine.generation_tokens_total": 900,
    }
    off = server(plugin_options={"trtllm": {"prometheus_metrics": False}})
    assert hooks.inferx_engine_metrics(server=off) is None


# -- golden launches: `inferx plan --platform` on NVIDIA nodes -------------------------------------

NODES = {
    "h100x8.json": "9.0",
    "h200x8.json": "9.0",
    "b200x8.json": "10.0",
    "gb200x4.json": "10.0",
}


@pytest.mark.parametrize("node", sorted(NODES))
def test_golden_launch(node: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("INFERX_CACHE_DIR", str(cache))
    platform = load_platform(PLATFORMS / node)
    tp = platform.gpu_count
    cfg = RunConfig(
        engine="trtllm",
        model=R1,
        parallelism={"tp": tp, "ep": tp},
        max_num_seqs=256,
        kv_cache_dtype="fp8",
        plugin_options={"trtllm": {"max_num_tokens": 8192, "moe_backend": "TRTLLM"}},
        output_dir=tmp_path / "results",
    )
    (item,) = plan([cfg], get_plugin_manager(env={}), platform)
    spec = item["spec"]
    engine = [
        "trtllm-serve",
        R1,
        "--backend",
        "pytorch",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--tp_size",
        str(tp),
        "--pp_size",
        "1",
        "--ep_size",
        str(tp),
        "--max_batch_size",
        "256",
        "--max_num_tokens",
        "8192",
        *YAML_ARG,
    ]
    assert spec["argv"] == engine
    run_dir = (tmp_path / "results" / "servers" / item["server"]).resolve()
    assert item["launcher"]["argv"][-1] == f"{run_dir}/extra_llm_api_options.yaml"
    assert item["launcher"]["unset_env"] == ["SLURM_*", "PMI*", "PMIX_*", "OMPI_*"]
    env = {
        "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(tp)),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FLASHINFER_CUDA_ARCH_LIST": NODES[node] + "a",
        "TORCH_CUDA_ARCH_LIST": NODES[node],
    }
    if node == "b200x8.json":  # NCCL 2.21.5 on Blackwell
        env |= {
            "CUDA_CACHE_PATH": str(cache / "nv-compute-cache"),
            "CUDA_CACHE_MAXSIZE": "4294967296",
            "CUDA_CACHE_DISABLE": "0",
        }
    if node == "gb200x4.json":  # NCCL 2.26.2, CUDA graphs on
        env["NCCL_GRAPH_REGISTER"] = "0"
    assert spec["env"] == env
    assert yaml.safe_load(spec["files"]["extra_llm_api_options.yaml"]) == {
        "kv_cache_config": {"enable_block_reuse": False, "dtype": "fp8"},
        "cuda_graph_config": {"enable_padding": True, "max_batch_size": 256},
        "moe_config": {"backend": "TRTLLM"},
        "return_perf_metrics": True,
        "enable_iter_perf_stats": True,
    }
    assert [w["kind"] for w in spec["preflight"]] == ["port_free", "gpu_memory_below"]
    not_applied = {d["id"]: d["reason"] for d in item["fixes_not_applied"]}
    assert not_applied["flashinfer-shared-cache"] == (
        "engine trtllm does not download FlashInfer kernels"
    )
