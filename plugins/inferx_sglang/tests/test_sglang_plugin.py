"""inferx_sglang: registration and the launch_server argv."""

from __future__ import annotations

from inferx_core.config import Parallelism, ServerConfig
from inferx_core.platform import Platform
from inferx_core.plugins import get_plugin_manager
from inferx_core.registry import engine_registry
from inferx_sglang import plugin


def test_registered_through_entry_point() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "sglang"})
    assert engine_registry(pm).get("sglang").distribution == "inferx-sglang"


def test_dp_attention_argv() -> None:
    server = ServerConfig(
        engine="sglang",
        model="deepseek-ai/DeepSeek-R1",
        port=30000,
        parallelism=Parallelism(tp=8, dp=8, dp_attention=True, ep=8),
        gpu_memory_utilization=0.85,
    )
    argv = list(plugin.inferx_engine_launch_spec(server=server, platform=Platform()).argv)
    assert argv[:5] == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "deepseek-ai/DeepSeek-R1",
    ]
    assert argv[argv.index("--dp-size") + 1] == "8" and "--enable-dp-attention" in argv
    assert argv[argv.index("--ep-size") + 1] == "8"
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.85"
    assert "--disable-radix-cache" in argv and "--enable-metrics" in argv


def test_metrics_names() -> None:
    m = plugin.inferx_engine_metrics(server=ServerConfig(engine="sglang", model="m", port=1))
    assert m.requests_running == "sglang:num_running_reqs"
