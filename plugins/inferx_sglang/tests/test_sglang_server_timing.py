"""SGLang's per-request speculative and cache details, read from a reply its own models build.

The stream's chunks are built with SGLang 0.5.23's own response models
(``ChatCompletionStreamResponse`` with ``SglExt`` / ``SpecTokensDetails`` and
``UsageInfo``) in its interpreter (.venv-sglang), serialised as its server
does, and fed to InferX's stream decoder with the plugin's description.
Without the interpreter it skips, saying why; with ``INFERX_REQUIRE_ENGINE=1``
(``make test``) it fails instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.server_clock import ServerClock
from inferx_core.load.transport.sse import StreamDecoder
from inferx_sglang import hooks, server_timing

ROOT = Path(__file__).resolve().parents[3]

# SGLang's interpreter here holds only what its server_args parser needs (make sglang), not
# the ``openai`` package its protocol module imports for unrelated request types: those
# are stubbed (TypedDict for openai's *Param types, else empty models) so SGLang's own
# response models below are imported and used as they are.
STUB_MISSING = r"""
import importlib, sys, types
from pydantic import BaseModel
from typing_extensions import TypedDict

def _stub(name):
    mod, cache = types.ModuleType(name), {}
    mod.__path__ = []
    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr not in cache:
            cache[attr] = (TypedDict(attr, {}, total=False) if attr.endswith("Param")
                           else type(attr, (BaseModel,), {"__module__": name}))
        return cache[attr]
    mod.__getattr__ = __getattr__
    return mod

for _ in range(100):
    try:
        importlib.import_module("sglang.srt.entrypoints.openai.protocol")
        break
    except ModuleNotFoundError as exc:
        parts = exc.name.split(".")
        for i in range(1, len(parts) + 1):
            sys.modules.setdefault(".".join(parts[:i]), _stub(".".join(parts[:i])))
"""

BUILD_REPLY = r"""
from sglang.srt.entrypoints.openai.protocol import (
    ChatCompletionResponseStreamChoice, ChatCompletionStreamResponse, DeltaMessage,
    PromptTokensDetails, SglExt, SpecTokensDetails, UsageInfo)
content = ChatCompletionStreamResponse(id="abc", model="m", choices=[
    ChatCompletionResponseStreamChoice(index=0, delta=DeltaMessage(content="hi"),
                                       finish_reason="length")])
spec = SpecTokensDetails(spec_accept_rate=0.5, spec_accept_length=2.5, spec_verify_ct=2,
                         spec_num_proposed_drafts=6, spec_num_correct_drafts=3,
                         spec_correct_drafts_histogram=[1, 0, 1, 0])
final = ChatCompletionStreamResponse(id="abc", model="m", choices=[],
    usage=UsageInfo(prompt_tokens=5, completion_tokens=1, total_tokens=6,
                    prompt_tokens_details=PromptTokensDetails(cached_tokens=4)),
    sglext=SglExt(spec_tokens_details=spec))
for chunk in (content, final):
    print(chunk.model_dump_json())
"""


def _sglang_python() -> Path:
    given = os.environ.get("INFERX_SGLANG_PYTHON")
    python = Path(given) if given else ROOT / ".venv-sglang" / "bin" / "python"
    if not python.is_file():
        why = "no SGLang interpreter: run `make sglang` (makes .venv-sglang)"
        if os.environ.get("INFERX_REQUIRE_ENGINE") == "1":
            pytest.fail(f"INFERX_REQUIRE_ENGINE=1 but {why}", pytrace=False)
        pytest.skip(why)
    return python


def test_a_reply_built_by_sglangs_own_models_fills_the_figures() -> None:
    done = subprocess.run(
        [str(_sglang_python()), "-c", STUB_MISSING + BUILD_REPLY],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    rec = RequestRecord(0, 5, 1)
    decoder = StreamDecoder(rec, clock=ServerClock(server_timing.SERVER_TIMING))
    body = b"".join(b"data: " + line.encode() + b"\n\n" for line in lines) + b"data: [DONE]\n\n"
    decoder.feed(body, 1)
    decoder.finish()
    assert rec.ok, rec.error
    assert rec.response_id == "abc"
    assert rec.server_fields is not None
    assert rec.server_fields["sglext"] == json.loads(lines[-1])["sglext"]  # as given
    assert rec.server_figures == {
        "queue_ms": None, "ttft_ms": None, "decode_ms": None, "spec_drafts": 2,
        "spec_draft_tokens": 6, "spec_accepted_tokens": 3, "cached_tokens": 4,
    }  # fmt: skip
    assert rec.server_problems == {
        f: "sglang does not report it" for f in ("queue_ms", "ttft_ms", "decode_ms")
    }


def test_every_request_asks_for_the_details() -> None:
    clock = ServerClock(hooks.inferx_engine_server_timing())
    body = json.loads(clock.add_to_body(b'{"model": "m"}'))
    assert body["return_spec_tokens_details"] is True and body["model"] == "m"
