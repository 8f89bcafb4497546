"""A reply is complete at [DONE] (or its finish_reason) even when the server keeps
the connection open (issue 27 section 5): it used to wait for the idle timeout
and count as failed.

Servers here write exact bytes (an asyncio server on the test's own loop), or
are the scripted server with ``hold_open``. Every request allows 5 s of silence
between tokens, so a reply that waited for the HTTP body's end would fail with
"no token for 5 s"; none does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.testing import ServerProcess

IDLE_S = 5.0
PAYLOAD = json.dumps({"model": "m", "prompt": "x", "stream": True, "max_tokens": 3}).encode()
CHUNKED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
)
UNFRAMED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"  # ends with the connection


def event(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def content(text: str, finish: str | None = None) -> bytes:
    return event({"choices": [{"index": 0, "text": text, "finish_reason": finish}]})


USAGE = event({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 3}})
DONE = event(b"[DONE]")
REPLY = [content("a"), content("b"), content("c", "length"), USAGE]


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


Script = Callable[[asyncio.StreamWriter], Awaitable[None]]


async def serve(script: Script, requests: int = 1) -> tuple[list[RequestRecord], int]:
    """Send ``requests`` one after another to a server answering each with ``script``."""

    server = await asyncio.start_server(_answer(script), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    records = []
    async with ConnectionPool(f"http://127.0.0.1:{port}") as pool:
        for i in range(requests):
            rec = RequestRecord(i, 1, 3)
            await send_streaming_request(
                pool, "/v1/completions", PAYLOAD, rec, timeout_s=30, token_idle_timeout_s=IDLE_S
            )
            records.append(rec)
        opened = pool.connections_opened
    server.close()
    return records, opened


async def done_then_open_chunked(w: asyncio.StreamWriter) -> None:
    w.write(CHUNKED + b"".join(chunk(e) for e in [*REPLY, DONE]))  # no last chunk


async def done_then_open_unframed(w: asyncio.StreamWriter) -> None:
    w.write(UNFRAMED + b"".join([*REPLY, DONE]))  # no close either


async def done_then_open_short_length(w: asyncio.StreamWriter) -> None:
    body = b"".join([*REPLY, DONE])
    w.write(UNFRAMED[:-2] + b"content-length: %d\r\n\r\n" % (len(body) + 100) + body)


async def finish_then_late_usage_no_done(w: asyncio.StreamWriter) -> None:
    # include_usage: the usage chunk comes after the finish_reason chunk; then nothing
    w.write(CHUNKED + b"".join(chunk(e) for e in REPLY[:3]))
    await asyncio.sleep(0.02)
    w.write(chunk(USAGE))


@pytest.mark.parametrize(
    "script",
    [done_then_open_chunked, done_then_open_unframed, done_then_open_short_length,
     finish_then_late_usage_no_done],
)  # fmt: skip
def test_a_complete_reply_on_an_open_connection_succeeds(script: Script) -> None:
    [rec], _ = asyncio.run(serve(script))
    assert rec.ok and rec.error is None, rec.error
    assert len(rec.chunk_ns) == 3 and rec.finish_reason == "length"
    assert rec.usage_output_tokens == 3  # the usage chunk after the finish_reason was kept
    assert rec.chunk_ns[-1] <= rec.end_ns


def test_the_next_request_does_not_reuse_a_connection_left_open() -> None:
    records, opened = asyncio.run(serve(done_then_open_chunked, requests=2))
    assert all(r.ok for r in records)
    assert opened == 2  # the body never ended: that connection is out of step


async def done_then_end_in_another_write(w: asyncio.StreamWriter) -> None:
    w.write(CHUNKED + b"".join(chunk(e) for e in [*REPLY, DONE]))
    await w.drain()
    await asyncio.sleep(0)  # uvicorn writes the last chunk separately
    w.write(b"0\r\n\r\n")


def test_a_body_that_ends_just_after_done_keeps_its_connection() -> None:
    records, opened = asyncio.run(serve(done_then_end_in_another_write, requests=3))
    assert all(r.ok for r in records)
    assert opened == 1


@pytest.mark.parametrize("knobs", [{}, {"fail": "no_done"}, {"usage": "finish"}])
def test_the_scripted_server_holding_the_connection_open(knobs: dict[str, Any]) -> None:
    async def run(base_url: str) -> list[RequestRecord]:
        async with ConnectionPool(base_url) as pool:
            out = []
            for i in range(2):
                rec = RequestRecord(i, 1, 4)
                payload = json.dumps(
                    {"model": "test-model", "prompt": "a b", "max_tokens": 4, "stream": True,
                     "stream_options": {"include_usage": True}}
                ).encode()  # fmt: skip
                await send_streaming_request(
                    pool, "/v1/completions", payload, rec, timeout_s=30,
                    token_idle_timeout_s=IDLE_S,
                )  # fmt: skip
                out.append(rec)
            return out

    with ServerProcess(hold_open=True, **knobs) as server:
        records = asyncio.run(run(server.base_url))
    for rec in records:
        assert rec.ok, rec.error
        assert len(rec.chunk_ns) == 4 and rec.usage_output_tokens == 4


def test_the_request_is_released_at_done_not_after_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server that keeps the connection open after [DONE] must not hold the load slot:
    # with a 60 s grace the requests still return at once (each settled at [DONE]), the
    # connections left open are not reused, and the pool's close ends them.
    from inferx_core.load.transport import connection

    monkeypatch.setattr(connection, "_DONE_GRACE_S", 60.0)

    async def bounded() -> tuple[list[RequestRecord], int]:
        return await asyncio.wait_for(serve(done_then_open_chunked, requests=3), 20)

    records, opened = asyncio.run(bounded())
    assert all(r.ok for r in records) and opened == 3
    assert all(r.end_ns >= r.chunk_ns[-1] for r in records)


async def done_then_late_end(w: asyncio.StreamWriter) -> None:
    w.write(CHUNKED + b"".join(chunk(e) for e in [*REPLY, DONE]))
    await w.drain()
    await asyncio.sleep(0.01)  # the body's end comes after the request was released
    w.write(b"0\r\n\r\n")


def test_a_connection_whose_body_ends_after_release_goes_back_to_the_pool() -> None:
    async def run() -> tuple[RequestRecord, int, int]:
        server = await asyncio.start_server(_answer(done_then_late_end), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with ConnectionPool(f"http://127.0.0.1:{port}") as pool:
            rec = RequestRecord(0, 1, 3)
            await send_streaming_request(pool, "/v1/completions", PAYLOAD, rec, timeout_s=30)
            released_idle = len(pool._idle)  # still draining: not handed out yet
            await asyncio.sleep(0.2)
            drained_idle = len(pool._idle)
        server.close()
        return rec, released_idle, drained_idle

    rec, released_idle, drained_idle = asyncio.run(run())
    assert rec.ok
    assert (released_idle, drained_idle) == (0, 1)


def _answer(script: Script) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                await script(writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()  # the client closed the connection

    return handle
