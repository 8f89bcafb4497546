"""inferx_trtllm: registration, argv and the MPI/SLURM environment scrub."""

from __future__ import annotations

from inferx_core.config import Parallelism, ServerConfig
from inferx_core.platform import Platform
from inferx_core.plugins import get_plugin_manager
from inferx_core.registry import engine_registry
from inferx_trtllm import plugin


def test_registered_through_entry_point() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "trtllm"})
    assert engine_registry(pm).get("trtllm").info.vendors == ("nvidia",)


def test_argv_and_env_scrub() -> None:
    server = ServerConfig(
        engine="trtllm",
        model="nvidia/Model-FP4",
        port=8000,
        parallelism=Parallelism(tp=4, ep=4),
        max_num_seqs=64,
    )
    spec = plugin.inferx_engine_launch_spec(server=server, platform=Platform())
    argv = list(spec.argv)
    assert argv[:4] == ["trtllm-serve", "nvidia/Model-FP4", "--backend", "pytorch"]
    assert argv[argv.index("--tp_size") + 1] == "4"
    assert argv[argv.index("--ep_size") + 1] == "4"
    assert argv[argv.index("--max_batch_size") + 1] == "64"
    assert {"SLURM_*", "PMI*", "OMPI_*"} <= set(spec.unset_env)
