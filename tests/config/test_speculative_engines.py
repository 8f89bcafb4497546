"""``speculative:`` on every engine plugin: its own flags went out, or a refusal naming the field.

The point id says ``spec-METHOD-nK`` whenever the config has ``speculative:``
(config/points.py), so a plugin that ignored it would label a plain server as
speculative (issue 39: ``engine: llamacpp`` gave ``...-spec-ngram-n3`` and an
argv with no speculative flag). Here every engine x method either changes the
launch (argv, env or the files the engine reads) or is refused before any
launch with a message naming ``speculative``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferx_core import Platform, ServerConfig, UserFacingError, get_plugin_manager, resolve_launch
from inferx_core.config.points import server_id
from inferx_core.config.speculative import SpeculativeMethod

ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")
METHODS: tuple[SpeculativeMethod, ...] = ("mtp", "eagle", "eagle3", "ngram", "draft_model")


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("gguf") / "draft.gguf"
    path.write_bytes(b"GGUF" + bytes(20))  # what llama.cpp's plan checks of a model file
    return str(path)


def launch_of(server: ServerConfig) -> dict[str, Any]:
    pm = get_plugin_manager(env={"INFERX_DISABLE_PLUGINS": "example-tpu"})
    spec = resolve_launch(pm, server, Platform()).spec
    return spec.model_dump(include={"argv", "env", "files"})


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", METHODS)
def test_each_engine_sends_speculative_flags_or_refuses_with_the_field(
    engine: str, method: SpeculativeMethod, gguf: str
) -> None:
    spec: dict[str, Any] = {"method": method, "num_speculative_tokens": 3}
    if method in ("eagle", "eagle3", "draft_model"):
        spec["draft_model"] = gguf
    model = gguf if engine == "llamacpp" else "org/model"
    plain = ServerConfig(engine=engine, model=model, port=8123)
    speculative = ServerConfig(engine=engine, model=model, port=8123, speculative=spec)
    try:
        launched = launch_of(speculative)
    except UserFacingError as exc:
        assert "speculative" in str(exc), f"{engine}/{method}: a refusal must name the field"
        return
    assert launched != launch_of(plain), (
        f"{engine} ignored speculative.method {method}: its point id would say spec with no "
        "speculative flag sent"
    )


def test_the_id_says_spec_for_llamacpp_now_that_flags_go_out(gguf: str) -> None:
    from inferx_core.config.models import RunConfig

    cfg = RunConfig(
        engine="llamacpp",
        model=gguf,
        speculative={"method": "ngram", "num_speculative_tokens": 3},
    )
    argv = launch_of(cfg.server().model_copy(update={"port": 8124}))["argv"]
    assert "spec-ngram-n3" in server_id(cfg)
    assert argv[argv.index("--spec-type") + 1] == "ngram-simple"
    assert Path(gguf).is_file()
