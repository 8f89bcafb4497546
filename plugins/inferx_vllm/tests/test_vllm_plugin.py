"""inferx_vllm: the argv it builds for representative configs, probes and metric names."""

from __future__ import annotations

import pytest

from inferx_core import UserFacingError
from inferx_core.config.models import Parallelism, ServerConfig
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform
from inferx_core.sdk.registries import engine_registry
from inferx_vllm import hooks

H200x8 = Platform(
    accelerators=tuple(
        Accelerator(vendor="nvidia", index=i, name="NVIDIA H200", compute_capability="9.0")
        for i in range(8)
    )
)
CPU = Platform()


def spec_for(platform: Platform, **kw):
    server = ServerConfig(engine="vllm", model="org/Model", port=8000, **kw)
    return hooks.inferx_engine_launch_spec(server=server, platform=platform)


def test_registered_through_entry_point() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm"})
    entry = engine_registry(pm).get("vllm")
    assert entry.distribution == "inferx-vllm" and "vLLM" in entry.info.description


def test_tp8_h200_argv() -> None:
    spec = spec_for(
        H200x8,
        parallelism=Parallelism(tp=8),
        max_num_seqs=256,
        max_model_len=2048,
        kv_cache_dtype="fp8",
    )
    assert list(spec.argv) == [
        "vllm",
        "serve",
        "org/Model",
        "--host",
        "127.0.0.1",
        "--port",
        "8000",
        "--served-model-name",
        "org/Model",
        "--tensor-parallel-size",
        "8",
        "--max-num-seqs",
        "256",
        "--gpu-memory-utilization",
        "0.9",
        "--max-model-len",
        "2048",
        "--no-enable-prefix-caching",
        "--kv-cache-dtype",
        "fp8",
        "--enable-per-request-metrics",  # the engine's own clock (inferx_vllm.server_timing)
        "--enable-request-id-headers",
    ]
    assert spec.gpu_ids == tuple(range(8))


def test_dp_with_expert_parallel_and_extra_args() -> None:
    spec = spec_for(
        H200x8,
        parallelism=Parallelism(tp=1, dp=8, expert_parallel=True),
        engine_args={
            "enforce_eager": True,
            "async-scheduling": False,
            "max-num-batched-tokens": 8192,
        },
        extra_argv=["--disable-log-stats"],
    )
    argv = list(spec.argv)
    assert argv[argv.index("--data-parallel-size") + 1] == "8"
    assert "--enable-expert-parallel" in argv
    assert "--enforce-eager" in argv and "--no-async-scheduling" in argv
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "8192"
    assert argv[-1] == "--disable-log-stats"
    assert spec.gpu_ids == tuple(range(8))


@pytest.mark.parametrize("dp", [1, 8])
def test_dp_attention_is_refused_not_dropped(dp: int) -> None:
    """SGLang's setting: vLLM would run dp ranks while the result counted tp GPUs."""
    with pytest.raises(UserFacingError, match="dp_attention is SGLang's") as err:
        spec_for(H200x8, parallelism=Parallelism(tp=1, dp=dp, ep=8, dp_attention=True))
    assert "remove dp_attention" in str(err.value)


def test_cpu_build_uses_module_entry_and_no_gpu_memory_flag() -> None:
    spec = spec_for(
        CPU,
        executable=["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"],
        served_model_name="tiny",
        dtype="float32",
    )
    argv = list(spec.argv)
    assert argv[:5] == [
        "/venv/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "org/Model",
    ]
    assert "--gpu-memory-utilization" not in argv
    assert argv[argv.index("--served-model-name") + 1] == "tiny"
    assert spec.gpu_ids == ()


def test_other_engines_are_not_answered() -> None:
    # The core asks an engine hook of the engine's own plugin only, so this plugin
    # needs no "is this my engine?" check and never answers for SGLang.
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm,sglang"})
    server = ServerConfig(engine="sglang", model="m", port=1)
    owner, spec = pm.call_first("inferx_engine_launch_spec", server=server, platform=CPU)
    assert owner == "sglang" and spec.engine == "sglang"
    assert pm.call_first("inferx_engine_readiness", server=server, spec=spec)[0] == "sglang"
    assert pm.call_first("inferx_engine_metrics", server=server)[0] == "sglang"


def test_readiness_and_metrics_map() -> None:
    server = ServerConfig(engine="vllm", model="m", port=1)
    probes = hooks.inferx_engine_readiness(server=server, spec=None)
    assert [p.path for p in probes] == ["/health", "/v1/models", "/v1/completions"]
    assert probes[1].expect_in_body == "{served_model_name}"
    metrics = hooks.inferx_engine_metrics(server=server)
    assert metrics.requests_running == "vllm:num_requests_running"
    assert metrics.kv_cache_usage.startswith("vllm:")


def test_the_entry_point_is_the_thin_hooks_module() -> None:
    """hooks.py holds only the hook implementations; launch and roles never import it."""
    import ast
    import inspect

    from inferx_vllm import hooks, launch, roles

    for module in (launch, roles):
        tree = ast.parse(inspect.getsource(module))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "inferx_vllm"
            for alias in node.names
        }
        assert "hooks" not in imported and not any(n.startswith("inferx_") for n in dir(module))
    public = [n for n in dir(hooks) if callable(getattr(hooks, n)) and n.startswith("inferx_")]
    assert "inferx_engine_role_spec" in public and "inferx_engine_tokenize_endpoints" in public


def test_tokenize_endpoint_is_vllms() -> None:
    (endpoint,) = hooks.inferx_engine_tokenize_endpoints()
    assert endpoint.path == "/tokenize" and endpoint.detokenize_path == "/detokenize"
    body = endpoint.tokenize_body("hi", False, "served")
    assert body == {"prompt": "hi", "add_special_tokens": False, "model": "served"}
    assert endpoint.max_model_len_field == "max_model_len"
    assert endpoint.detokenize_text_fields == ("prompt",)
