"""vLLM's own per-request clock: launched servers get the flags; replies read as vLLM writes them.

The reply test builds a stream's chunks with vLLM's own response models
(``ChatCompletionStreamResponse`` with ``PerRequestMetrics`` and
``SpeculativeDecodingMetrics``, serialised as its server does:
``model_dump_json(exclude_unset=True, exclude_none=True)``) in the engine venv
(.venv-engine), and feeds them to InferX's stream decoder with the plugin's
description. Without an engine python it skips, saying why; with
``INFERX_REQUIRE_ENGINE=1`` (``make test``) it fails instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from inferx_core.config.models import ServerConfig
from inferx_core.demo.engine import find_engine_python, missing_engine_message
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.server_clock import ServerClock
from inferx_core.load.transport.sse import StreamDecoder
from inferx_core.sdk.platform import Platform
from inferx_vllm import hooks, server_timing

BUILD_REPLY = r"""
import json
from vllm.entrypoints.generate.base.protocol import (
    DeltaMessage, PerRequestMetrics, SpeculativeDecodingMetrics)
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionResponseStreamChoice, ChatCompletionStreamResponse)
from vllm.entrypoints.serve.engine.protocol import PromptTokenUsageInfo, UsageInfo
rid = "chatcmpl-inferx-1234abcd-0"
content = ChatCompletionStreamResponse(id=rid, model="m", choices=[
    ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="hi"),
                                       finish_reason="length")])
spec = SpeculativeDecodingMetrics(mean_acceptance_length=2.5, draft_acceptance_rate=0.5,
    acceptance_histogram=[1, 0, 1, 0], num_spec_steps=2, num_accepted_draft_tokens=3,
    num_draft_tokens=6, num_spec_tokens=3)
final = ChatCompletionStreamResponse(id=rid, model="m", choices=[],
    usage=UsageInfo(prompt_tokens=5, completion_tokens=1, total_tokens=6,
                    prompt_tokens_details=PromptTokenUsageInfo(cached_tokens=4)),
    metrics=PerRequestMetrics(time_to_first_token_ms=12.5, generation_time_ms=0.0,
                              queue_time_ms=0.75, speculative_decoding=spec))
for chunk in (content, final):
    print(chunk.model_dump_json(exclude_unset=True, exclude_none=True))
"""


@pytest.fixture(scope="module")
def engine_python() -> Path:
    python = find_engine_python()
    if python is None:
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(f"INFERX_REQUIRE_ENGINE=1 but {missing_engine_message()}", pytrace=False)
        pytest.skip(missing_engine_message())
    return python


def test_a_reply_built_by_vllms_own_models_fills_the_figures(engine_python: Path) -> None:
    done = subprocess.run(
        [str(engine_python), "-c", BUILD_REPLY], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    rec = RequestRecord(0, 5, 1)
    decoder = StreamDecoder(rec, clock=ServerClock(server_timing.SERVER_TIMING))
    body = b"".join(b"data: " + line.encode() + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    decoder.feed(body, 1)
    decoder.finish()
    assert rec.ok, rec.error
    assert rec.response_id == "chatcmpl-inferx-1234abcd-0"
    assert rec.server_fields is not None
    assert rec.server_fields["metrics"] == json.loads(lines[-1])["metrics"]  # as given
    assert rec.server_figures == {
        "queue_ms": 0.75, "ttft_ms": 12.5, "decode_ms": 0.0, "spec_drafts": 2,
        "spec_draft_tokens": 6, "spec_accepted_tokens": 3, "cached_tokens": 4,
    }  # fmt: skip
    assert rec.server_problems is None


def _argv(**server: object) -> tuple[str, ...]:
    config = ServerConfig(engine="vllm", model="m", port=8000, **server)  # type: ignore[arg-type]
    return hooks.inferx_engine_launch_spec(config, Platform()).argv


def test_a_launched_server_gets_the_flags_by_default() -> None:
    argv = _argv()
    assert argv[-2:] == server_timing.FLAGS
    timing = hooks.inferx_engine_server_timing(ServerConfig(engine="vllm", model="m"))
    assert timing is server_timing.SERVER_TIMING


@pytest.mark.parametrize(
    "server",
    [{"engine_args": {"disable_log_stats": True}}, {"extra_argv": ["--disable-log-stats"]}],
)
def test_never_with_disable_log_stats_which_vllm_refuses(server: dict) -> None:
    argv = _argv(**server)
    assert not set(server_timing.FLAGS) & set(argv)
    assert (
        hooks.inferx_engine_server_timing(ServerConfig(engine="vllm", model="m", **server)) is None
    )


def test_a_flag_the_user_set_is_left_as_set() -> None:
    argv = _argv(engine_args={"enable_per_request_metrics": False})
    assert "--enable-per-request-metrics" not in argv
    assert "--no-enable-per-request-metrics" in argv and "--enable-request-id-headers" in argv
    off = ServerConfig(engine="vllm", model="m", engine_args={"enable_per_request_metrics": False})
    assert hooks.inferx_engine_server_timing(off) is None
    assert (
        _argv(extra_argv=["--enable-request-id-headers"]).count("--enable-request-id-headers") == 1
    )


def test_a_deployments_processes_are_unchanged() -> None:
    from inferx_vllm import launch

    config = ServerConfig(engine="vllm", model="m", port=8000)
    assert not set(server_timing.FLAGS) & set(launch.launch_spec(config, Platform()).argv)


def test_a_speculating_server_reports_its_per_request_acceptance() -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    argv = _argv(speculative=spec)
    assert argv[-2:] == ("--per-request-spec-decode-metrics", "summary")
    assert "--enable-per-request-metrics" in argv
    # independent of --disable-log-stats (vLLM's own docs), unlike the timing flag
    quiet = _argv(speculative=spec, extra_argv=["--disable-log-stats"])
    assert quiet[-2:] == ("--per-request-spec-decode-metrics", "summary")
    assert "--per-request-spec-decode-metrics" not in _argv()
