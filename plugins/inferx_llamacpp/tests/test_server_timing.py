"""llama-server's ``timings`` read into the records, as its server writes them.

The last chunk here is shaped by llama.cpp's own ``server_slot_stats::to_json``
(tools/server/server-common.cpp in the llama-cpp-python 0.3.36 sources the
engine is built from): counts are integers, times doubles, and the draft
counts appear only when the server speculated.
"""

from __future__ import annotations

import json

from inferx_core.config.models import ServerConfig
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.server_clock import ServerClock, engine_server_timing
from inferx_core.load.transport.sse import StreamDecoder
from inferx_core.sdk.manager import get_plugin_manager
from inferx_llamacpp.server_timing import SERVER_TIMING


def _read(timings: dict) -> RequestRecord:
    chunks = [
        {"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {"content": "a"}}]},
        {"id": "chatcmpl-x", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
         "timings": timings},
    ]  # fmt: skip
    rec = RequestRecord(0, 4, 1)
    decoder = StreamDecoder(rec, clock=ServerClock(SERVER_TIMING))
    decoder.feed(b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks), 1)
    decoder.feed(b"data: [DONE]\n\n", 2)
    decoder.finish()
    assert rec.ok, rec.error
    return rec


STATS = {"cache_n": 0, "prompt_n": 4, "prompt_ms": 8.25, "prompt_per_token_ms": 2.06,
         "prompt_per_second": 484.8, "predicted_n": 1, "predicted_ms": 0.001,
         "predicted_per_token_ms": 0.0, "predicted_per_second": 0.0}  # fmt: skip


def test_timings_without_speculation() -> None:
    rec = _read(STATS)
    assert rec.server_fields == {"timings": STATS}
    assert rec.server_figures is not None and rec.server_problems is not None
    assert rec.server_figures["ttft_ms"] == 8.25 and rec.server_figures["decode_ms"] == 0.001
    assert rec.server_figures["cached_tokens"] == 0
    assert rec.server_figures["queue_ms"] is None
    assert rec.server_problems["queue_ms"] == "llama.cpp does not report it"
    assert "timings.draft_n" in rec.server_problems["spec_draft_tokens"]


def test_draft_counts_when_it_speculates() -> None:
    rec = _read({**STATS, "draft_n": 12, "draft_n_accepted": 7})
    assert rec.server_figures is not None
    assert rec.server_figures["spec_draft_tokens"] == 12
    assert rec.server_figures["spec_accepted_tokens"] == 7


def test_the_plugin_answers_the_hook() -> None:
    server = ServerConfig(engine="llamacpp", model="m.gguf")
    assert engine_server_timing(server, get_plugin_manager()) == SERVER_TIMING
