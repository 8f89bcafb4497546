"""Client-side validity facts: truncated streams, the client's own resource errors, fd limits."""

from __future__ import annotations

import asyncio
import errno
import json
import subprocess
import sys

import pytest

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.load.transport.sse import StreamDecoder


def _event(text: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "text": text, "finish_reason": finish}
    return f"data: {json.dumps({'choices': [choice]})}\n\n".encode()


def test_a_body_cut_short_is_a_truncated_failure() -> None:
    rec = RequestRecord(0, 4, 8)
    decoder = StreamDecoder(rec)
    for i, word in enumerate(("a", "b", "c")):  # 3 of 8 tokens, then the connection closes
        decoder.feed(_event(word), 1000 + i)
    decoder.close(2000)
    decoder.finish()
    assert not rec.ok and rec.error_kind == "truncated"
    assert "3 content chunks without [DONE] or a finish_reason" in rec.error


@pytest.mark.parametrize("ending", [b"data: [DONE]\n\n", _event("", finish="length")])
def test_a_reply_ended_by_done_or_finish_reason_is_complete(ending: bytes) -> None:
    rec = RequestRecord(0, 4, 2)
    decoder = StreamDecoder(rec)
    decoder.feed(_event("a") + _event("b") + ending, 1000)
    decoder.close(2000)
    decoder.finish()
    assert rec.ok and rec.error is None


def test_out_of_file_descriptors_is_the_clients_fault(monkeypatch) -> None:
    async def run() -> RequestRecord:
        loop = asyncio.get_running_loop()

        async def no_fds(*args, **kwargs):
            raise OSError(errno.EMFILE, "Too many open files")

        monkeypatch.setattr(loop, "create_connection", no_fds)
        async with ConnectionPool("http://127.0.0.1:9") as pool:
            return await send_streaming_request(
                pool, "/v1/completions", b"{}", RequestRecord(0, 1, 1), timeout_s=5
            )

    rec = asyncio.run(run())
    assert rec.error_kind == "client_resource" and "ulimit -n" in rec.error


LIMIT_SCRIPT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 600))
from inferx_core.load.transport.limits import ensure_concurrency_fits
ensure_concurrency_fits(400)  # fits once the soft limit is raised to the hard one
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
try:
    ensure_concurrency_fits(1000)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_open_files_limit_is_raised_and_an_impossible_concurrency_refused() -> None:
    out = subprocess.run(
        [sys.executable, "-c", LIMIT_SCRIPT], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "600"
    assert out[1].startswith("UserFacingError concurrency 1000 needs about 1064 open files")
    assert "ulimit -n 1064" in out[1]
