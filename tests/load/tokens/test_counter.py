"""The token counter asks only the engine's own plugin for its tokenize routes.

``inferx run`` knows the engine it launched, and ``inferx bench --engine`` the
engine behind the server: the routes tried are that engine's plugin's (hook
``inferx_engine_tokenize_endpoints``), not whichever plugin answers first. The
scripted server's ``/tokenize`` speaks every dialect tried here, so the route
the counter settled on names the plugin that was asked.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import fake_engine
import pytest

from inferx_core import hookimpl
from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig, ServerConfig
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.testing import ServerProcess


def test_the_runner_asks_the_launched_engines_plugin(tmp_path: Path) -> None:
    asked: list[Any] = []

    @hookimpl
    def inferx_engine_tokenize_endpoints(server: ServerConfig | None) -> None:
        asked.append(server)  # an extension (no engine of its own) sees the call

    spy = types.ModuleType("tokenize_spy")
    spy.inferx_engine_tokenize_endpoints = inferx_engine_tokenize_endpoints  # type: ignore[attr-defined]
    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine), ("spy", spy)]
    )
    cfg = RunConfig.model_validate(
        {
            "engine": "fake",
            "model": "org/tiny-model",
            "readiness_timeout_s": 30,
            "stop_grace_s": 5,
            "workload": {"isl": 16, "osl": 4},
            "load": {"concurrency": [1], "num_prompts": 2},
        }
    )
    summary = run_configs([cfg], pm=pm, platform=Platform(), output_dir=tmp_path, progress=False)
    (outcome,) = summary.outcomes
    assert outcome.status == "ok", outcome.result.failure_reason
    assert [s.engine for s in asked] == ["fake"]  # the run's pm, with the launched server
    counting = outcome.result.model_dump(mode="json")["workload"]["token_counting"]
    assert counting["token_source"] == "server"
    assert counting["counter"].endswith("/tokenize (fake)"), counting


def test_bench_with_engine_asks_only_that_engines_plugin(tmp_path: Path, capsys) -> None:
    """Every installed plugin's routes would try vLLM's first; --engine sglang tries SGLang's."""
    with ServerProcess() as server:
        argv = [
            "bench",
            "--base-url",
            server.base_url,
            "--engine",
            "sglang",
            "--isl",
            "16",
            "--osl",
            "4",
            "--concurrency",
            "1",
            "--num-prompts",
            "2",
            "--no-telemetry",
            "--no-progress",
            "--json",
            "--output",
            str(tmp_path),
        ]
        assert main(argv) == 0
    (result,) = json.loads(capsys.readouterr().out)
    counting = result["workload"]["token_counting"]
    assert counting["token_source"] == "server"
    assert counting["counter"].endswith("/tokenize (sglang)"), counting
    assert "vllm" not in json.dumps(counting["attempts"])


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))
