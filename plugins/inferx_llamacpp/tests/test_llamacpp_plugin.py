"""The llama-server command built from a config: slots, context, caching, binary, model."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core import (
    Accelerator,
    LoadProfile,
    Platform,
    RunConfig,
    ServerConfig,
    UserFacingError,
    get_plugin_manager,
    resolve_launch,
)
from inferx_llamacpp import engine_paths, hooks, launch
from inferx_llamacpp.model_checks import GGUF_MAGIC

#: A GGUF file's first bytes: what the plan checks of a model (set per test).
MODEL = ""


@pytest.fixture(autouse=True)
def _gguf_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(GGUF_MAGIC + bytes(20))
    monkeypatch.setitem(globals(), "MODEL", str(path))
    return str(path)


@pytest.fixture(autouse=True)
def _fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache holding a finished build, so argv names a binary whatever the machine has."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(engine_paths.BINARY_ENV, raising=False)
    folder = engine_paths.engine_dir()
    (folder / "bin").mkdir(parents=True)
    binary = folder / "bin" / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (folder / engine_paths.INSTALLED_STAMP).write_text("built\n")
    return binary


def server(**kw: object) -> ServerConfig:
    return ServerConfig(engine="llamacpp", model=MODEL, port=8123, **kw)  # type: ignore[arg-type]


def argv(load: LoadProfile | None = None, **kw: object) -> list[str]:
    spec = hooks.inferx_engine_launch_spec(server=server(**kw), platform=Platform(), load=load)
    return list(spec.argv)


def value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_the_cached_build_runs_the_model_with_metrics_templates_and_no_ui(
    _fake_binary: Path,
) -> None:
    args = argv()
    assert args[0] == str(_fake_binary)
    assert value(args, "--model") == MODEL
    assert value(args, "--port") == "8123" and value(args, "--alias") == MODEL
    assert {"--metrics", "--jinja", "--no-webui", "--cont-batching"} <= set(args)


def test_slots_come_from_max_num_seqs_else_the_loads_highest_concurrency() -> None:
    assert value(argv(max_num_seqs=6), "--parallel") == "6"
    assert value(argv(LoadProfile(concurrency=[1, 16, 4])), "--parallel") == "16"
    rate = LoadProfile(request_rate=[2.0], max_concurrency=12, num_prompts=10)
    assert value(argv(rate), "--parallel") == "12"
    assert value(argv(None), "--parallel") == str(launch.DEFAULT_SLOTS)


@settings(max_examples=25, deadline=None)
@given(slots=st.integers(1, 64), context=st.integers(16, 32768))
def test_each_slot_gets_max_model_len_of_context(slots: int, context: int) -> None:
    args = argv(max_num_seqs=slots, max_model_len=context)
    # llama-server splits --ctx-size among the slots (per-slot KV cache)
    assert int(value(args, "--ctx-size")) // int(value(args, "--parallel")) == context
    assert "--no-kv-unified" in args


def test_without_max_model_len_the_models_context_is_shared() -> None:
    args = argv()
    assert value(args, "--ctx-size") == "0" and "--kv-unified" in args


def test_prompt_caching_is_off_unless_the_config_turns_it_on() -> None:
    off = argv()
    assert "--no-cache-prompt" in off and value(off, "--cache-ram") == "0"
    on = argv(prefix_caching=True)
    assert "--cache-prompt" in on and "--no-cache-prompt" not in on and "--cache-ram" not in on


def test_engine_args_become_flags_but_cannot_override_named_fields() -> None:
    args = argv(engine_args={"n_gpu_layers": 99, "flash-attn": "on", "mlock": True})
    assert value(args, "--n-gpu-layers") == "99" and value(args, "--flash-attn") == "on"
    assert "--mlock" in args
    with pytest.raises(UserFacingError, match=r"engine_args.parallel: .*max_num_seqs"):
        argv(engine_args={"parallel": 3})


def test_the_binary_comes_from_executable_env_cache_or_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _fake_binary: Path
) -> None:
    assert argv(executable=["/opt/llama/bin/llama-server"])[0] == "/opt/llama/bin/llama-server"
    own = tmp_path / "own-llama-server"
    own.write_text("#!/bin/sh\n")
    own.chmod(0o755)
    monkeypatch.setenv(engine_paths.BINARY_ENV, str(own))
    assert argv()[0] == str(own)
    monkeypatch.delenv(engine_paths.BINARY_ENV)
    (_fake_binary.parent.parent / engine_paths.INSTALLED_STAMP).unlink()  # a half-made build
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    spec = hooks.inferx_engine_launch_spec(server=server(), platform=Platform(), load=None)
    assert spec.argv[0] == "llama-server"
    assert any("make llama-server" in w for w in spec.warnings)


def test_a_hub_id_is_passed_on_with_a_warning() -> None:
    spec = hooks.inferx_engine_launch_spec(
        server=ServerConfig(engine="llamacpp", model="org/model", port=8080),
        platform=Platform(),
        load=None,
    )
    assert any("local .gguf" in w for w in spec.warnings)


def test_a_run_plans_its_slots_from_its_own_load() -> None:
    """Through the core's public resolve_launch: the run's load reaches the engine's plugin."""
    cfg = RunConfig(engine="llamacpp", model=MODEL, load={"concurrency": [2, 9]})
    pm = get_plugin_manager(env={"INFERX_DISABLE_PLUGINS": "example-tpu"})
    planned = resolve_launch(
        pm, cfg.server().model_copy(update={"port": 8124}), Platform(), load=cfg.load
    )
    assert value(list(planned.spec.argv), "--parallel") == "9"
    # without a load (doctor, fixes, the plugin kit) llama-server's own default
    bare = resolve_launch(pm, cfg.server().model_copy(update={"port": 8125}), Platform())
    assert value(list(bare.spec.argv), "--parallel") == str(launch.DEFAULT_SLOTS)


GPU = Platform(accelerators=[Accelerator(index=i, vendor="nvidia", name="H100") for i in range(4)])


@pytest.mark.parametrize(
    ("par", "mode"), [({"tp": 2}, "row"), ({"pp": 4}, "layer")]
)  # fmt: skip
def test_tp_splits_rows_and_pp_splits_layers_over_the_gpus(par: dict, mode: str) -> None:
    spec = hooks.inferx_engine_launch_spec(server=server(parallelism=par), platform=GPU, load=None)
    assert value(list(spec.argv), "--split-mode") == mode
    assert spec.gpu_ids == tuple(range(max(par.values())))


def test_one_gpu_or_cpu_has_no_split() -> None:
    assert "--split-mode" not in argv()
    spec = hooks.inferx_engine_launch_spec(server=server(), platform=GPU, load=None)
    assert "--split-mode" not in spec.argv and spec.gpu_ids == (0,)


@pytest.mark.parametrize(
    ("par", "field"),
    [
        ({"dp": 2}, "parallelism.dp"),
        ({"ep": 8}, "parallelism.ep"),
        ({"expert_parallel": True}, "parallelism.expert_parallel"),
        ({"tp": 2, "dp_attention": True}, "parallelism.dp_attention"),
        ({"tp": 2, "pp": 2}, "parallelism.tp and parallelism.pp"),
    ],
)
def test_parallelism_llama_server_lacks_is_refused_not_dropped(par: dict, field: str) -> None:
    with pytest.raises(UserFacingError, match=field):
        hooks.inferx_engine_launch_spec(server=server(parallelism=par), platform=GPU, load=None)


def test_a_split_without_gpus_is_refused() -> None:
    with pytest.raises(UserFacingError, match=r"parallelism\.tp: 2 GPUs asked, but this machine"):
        argv(parallelism={"tp": 2})


def test_metrics_map_llama_servers_names() -> None:
    names = hooks.inferx_engine_metrics(server=server())
    assert names.requests_running == "llamacpp:requests_processing"
    assert names.prefix_cache_hits == "llamacpp:prompt_tokens_cached_total"
    assert names.prefix_cache_misses == "llamacpp:prompt_tokens_total"
    assert names.prefix_cache_queries is None and names.kv_cache_usage is None


def test_the_makefile_builds_the_version_the_plugin_looks_for() -> None:
    makefile = Path(__file__).resolve().parents[3] / "Makefile"
    if not makefile.is_file():
        pytest.skip("not in an InferX checkout")
    line = next(
        ln for ln in makefile.read_text().splitlines() if ln.startswith("LLAMA_CPP_PYTHON_VERSION")
    )
    assert line.split(":=")[1].strip() == engine_paths.LLAMA_CPP_PYTHON_VERSION


def test_tokenize_endpoint_is_llama_servers() -> None:
    from inferx_llamacpp import hooks as llamacpp

    (endpoint,) = llamacpp.inferx_engine_tokenize_endpoints()
    assert endpoint.path == "/tokenize" and endpoint.detokenize_path == "/detokenize"
    # no model field: llama-server serves one model and reads "content"
    assert endpoint.tokenize_body("hi", True, "served") == {"content": "hi", "add_special": True}
    assert endpoint.token_id_field == "id"  # with_pieces replies {id, piece}
    assert endpoint.detokenize_text_fields == ("content",)
