"""The streaming client against the scripted server (and a few raw byte servers)."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from inferx_core.load.prompts.payloads import build_chat_payload, build_completions_payload
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import PreparedRequest
from inferx_core.load.transport.client import ConnectionPool, send_streaming_request
from inferx_core.testing import ServerProcess, SSETestServer

MakeRequest = Callable[..., PreparedRequest]


async def send(
    base_url: str,
    req: PreparedRequest,
    *,
    timeout_s: float = 10.0,
    idle_timeout_s: float | None = None,
    pool: ConnectionPool | None = None,
) -> RequestRecord:
    own = pool is None
    pool = pool or ConnectionPool(base_url)
    try:
        return await send_streaming_request(
            pool,
            req.path,
            req.payload,
            req.record,
            timeout_s=timeout_s,
            idle_timeout_s=idle_timeout_s,
        )
    finally:
        if own:
            await pool.close()


def run_one(base_url: str, req: PreparedRequest, **kw: float | None) -> RequestRecord:
    return asyncio.run(send(base_url, req, **kw))  # type: ignore[arg-type]


def ms(ns: int) -> float:
    return ns / 1e6


# -- payloads -------------------------------------------------------------------


def test_completions_payload_defaults_and_extra_body() -> None:
    body = json.loads(
        build_completions_payload("m", [1, 2, 3], 64, extra_body={"min_tokens": 64, "top_k": 1})
    )
    assert body == {
        "model": "m",
        "max_tokens": 64,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "prompt": [1, 2, 3],
        "min_tokens": 64,
        "top_k": 1,
    }


def test_chat_payload_wraps_a_string_and_ignore_eos_can_be_off() -> None:
    body = json.loads(build_chat_payload("m", "hi", 8, ignore_eos=False))
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "ignore_eos" not in body and body["stream"] is True


# -- success paths ------------------------------------------------------------------


@pytest.mark.parametrize("chat", [False, True])
def test_stream_fills_the_record(
    server: ServerProcess, chat: bool, make_request: MakeRequest
) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=12, chat=chat))
    assert rec.ok, rec.error
    assert rec.status_code == 200
    assert len(rec.chunk_ns) == 12
    assert rec.usage_output_tokens == 12 and rec.usage_prompt_tokens == 2
    assert rec.finish_reason == "length"
    assert rec.send_ns < rec.chunk_ns[0] <= rec.chunk_ns[-1] <= rec.end_ns
    assert rec.chunk_ns == sorted(rec.chunk_ns)


@pytest.mark.parametrize("usage", ["finish", "none", "continuous"])
def test_usage_placements(server: ServerProcess, usage: str, make_request: MakeRequest) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=7, usage=usage, tokens_per_chunk=3))
    assert rec.ok, rec.error
    assert len(rec.chunk_ns) == 3
    assert rec.usage_output_tokens == (None if usage == "none" else 7)
    assert rec.output_tokens == (3 if usage == "none" else 7)
    assert rec.chunk_tokens == ([3, 3, 1] if usage == "continuous" else None)


def test_ignore_eos_off_lets_the_server_stop_early(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    req = make_request(max_tokens=20, natural_len=5)
    req.payload = build_completions_payload(
        "m", "x", 20, ignore_eos=False, extra_body={"x_test": {"natural_len": 5}}
    )
    rec = run_one(server.base_url, req)
    assert rec.ok and len(rec.chunk_ns) == 5 and rec.finish_reason == "stop"


def test_measured_ttft_and_itl_match_injected_delays(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    # Chat: the role-only chunk arrives at once and must not count as the first token.
    async def go() -> list[RequestRecord]:
        async with ConnectionPool(server.base_url) as pool:
            recs = []
            for i in range(3):
                req = make_request(i, 20, chat=True, ttft_ms=40, itl_ms=10, comments=True)
                recs.append(
                    await send_streaming_request(
                        pool, req.path, req.payload, req.record, timeout_s=10
                    )
                )
            return recs

    recs = asyncio.run(go())
    assert all(r.ok for r in recs)
    ttfts = [ms(r.chunk_ns[0] - r.send_ns) for r in recs]
    itls = [ms(b - a) for r in recs for a, b in zip(r.chunk_ns, r.chunk_ns[1:], strict=False)]
    # The server schedules chunk i at t0 + ttft + i*itl, so TTFT >= 40 ms; the
    # upper bound leaves room for a noisy 2-core machine.
    assert 40.0 <= statistics.median(ttfts) <= 55.0, ttfts
    assert min(ttfts) >= 39.5, ttfts
    assert 9.0 <= statistics.median(itls) <= 12.0, itls
    assert 9.5 <= statistics.mean(itls) <= 12.0, itls


def test_keep_alive_reuses_one_connection(server: ServerProcess, make_request: MakeRequest) -> None:
    async def go() -> tuple[list[RequestRecord], int]:
        async with ConnectionPool(server.base_url) as pool:
            recs = [await send(server.base_url, make_request(i), pool=pool) for i in range(5)]
            return recs, pool.connections_opened

    recs, opened = asyncio.run(go())
    assert all(r.ok for r in recs)
    assert opened == 1


def test_concurrent_requests_get_their_own_connections(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    async def go() -> tuple[list[RequestRecord], int]:
        async with ConnectionPool(server.base_url) as pool:
            reqs = [make_request(i, 10, itl_ms=2) for i in range(6)]
            recs = await asyncio.gather(*(send(server.base_url, r, pool=pool) for r in reqs))
            again = await send(server.base_url, make_request(9), pool=pool)
            return [*recs, again], pool.connections_opened

    recs, opened = asyncio.run(go())
    assert all(r.ok for r in recs)
    assert opened == 6


# -- failures: every kind ends as a failed record with its reason --------------------


@pytest.mark.parametrize(
    ("fail", "kind", "needle", "status"),
    [
        ("http_500", "http_status", "HTTP 500: ", 500),
        ("http_429", "http_status", "scripted rate limit", 429),
        ("error_mid", "stream_error", "scripted mid-stream failure", 200),
        ("drop", "connection", "closed mid-stream after 4 content chunks", 200),
        ("malformed", "malformed", "invalid JSON", 200),
    ],
)
def test_failure_kinds(
    server: ServerProcess, fail: str, kind: str, needle: str, status: int, make_request: MakeRequest
) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=8, fail=fail))
    assert not rec.ok
    assert rec.error_kind == kind
    assert needle in (rec.error or "")
    assert rec.status_code == status
    assert rec.end_ns >= rec.send_ns > 0


def test_no_done_ends_normally_with_content(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=8, fail="no_done"))
    assert rec.ok and len(rec.chunk_ns) == 8 and rec.usage_output_tokens == 8


def test_zero_tokens_is_no_content(server: ServerProcess, make_request: MakeRequest) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=0))
    assert rec.error_kind == "no_content"


def test_hang_hits_the_idle_timeout(server: ServerProcess, make_request: MakeRequest) -> None:
    t0 = time.perf_counter()
    rec = run_one(server.base_url, make_request(fail="hang", fail_after=2), idle_timeout_s=0.3)
    assert rec.error_kind == "timeout" and "no data for 0.3 s" in (rec.error or "")
    assert len(rec.chunk_ns) == 2
    assert time.perf_counter() - t0 < 2.0


def test_hang_hits_the_total_timeout(server: ServerProcess, make_request: MakeRequest) -> None:
    t0 = time.perf_counter()
    rec = run_one(server.base_url, make_request(fail="hang", fail_after=0), timeout_s=0.3)
    assert rec.error_kind == "timeout" and "no completion within 0.3 s" in (rec.error or "")
    assert 0.29 <= time.perf_counter() - t0 < 2.0


def test_total_timeout_on_a_slow_but_steady_stream(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    rec = run_one(server.base_url, make_request(max_tokens=100, itl_ms=10), timeout_s=0.2)
    assert rec.error_kind == "timeout" and 5 < len(rec.chunk_ns) < 100


def test_connection_refused(make_request: MakeRequest) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nobody listens there
    rec = run_one(f"http://127.0.0.1:{port}", make_request())
    assert rec.error_kind == "connection" and "failed" in (rec.error or "")


def test_failed_requests_do_not_poison_the_pool(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    async def go() -> list[RequestRecord]:
        async with ConnectionPool(server.base_url) as pool:
            out = []
            for fail in ["drop", "malformed", "http_500", "error_mid", None]:
                x = {"fail": fail} if fail else {}
                out.append(await send(server.base_url, make_request(max_tokens=6, **x), pool=pool))
            return out

    recs = asyncio.run(go())
    assert [r.ok for r in recs] == [False, False, False, False, True]


def test_cancel_marks_the_record_and_propagates(
    server: ServerProcess, make_request: MakeRequest
) -> None:
    req = make_request(fail="hang", fail_after=1)

    async def go() -> None:
        task = asyncio.create_task(send(server.base_url, req))
        # Cancel once the first chunk is in, however slow a loaded machine is.
        deadline = asyncio.get_running_loop().time() + 30
        while not req.record.chunk_ns:
            assert asyncio.get_running_loop().time() < deadline, "no first chunk"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert req.record.error_kind == "cancelled"
    assert len(req.record.chunk_ns) == 1 and req.record.end_ns > 0


# -- raw servers: framing variants and keep-alive races -------------------------------

SSE_BODY = (
    b'data: {"choices":[{"text":"a"}]}\n\n'
    b'data: {"choices":[{"text":"b","finish_reason":"length"}]}\n\n'
    b"data: [DONE]\n\n"
)


class RawServer:
    """Answers the n-th request on a connection with ``script(conn_no, req_no)``.

    The script returns bytes to send, and whether to close afterwards; None
    closes without answering.
    """

    def __init__(self, script: Callable[[int, int], tuple[bytes, bool] | None]) -> None:
        self.script = script
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.base_url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(
                target=self._handle, args=(conn, self.connections), daemon=True
            ).start()

    def _handle(self, conn: socket.socket, conn_no: int) -> None:
        buf = b""
        req_no = 0
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, rest = buf.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(rest) < length:
                    rest += conn.recv(65536)
                buf = rest[length:]
                req_no += 1
                action = self.script(conn_no, req_no)
                if action is None:
                    return
                out, close = action
                conn.sendall(out)
                if close:
                    return

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def make(script: Callable[[int, int], tuple[bytes, bool] | None]) -> RawServer:
        srv = RawServer(script).__enter__()
        servers.append(srv)
        return srv

    yield make
    for s in servers:
        s.__exit__()


def test_content_length_body(raw: Callable[..., RawServer], make_request: MakeRequest) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
    srv = raw(lambda c, r: (head % len(SSE_BODY) + SSE_BODY, False))

    async def go() -> tuple[list[RequestRecord], int]:
        async with ConnectionPool(srv.base_url) as pool:
            recs = [await send(srv.base_url, make_request(i), pool=pool) for i in range(3)]
            return recs, pool.connections_opened

    recs, opened = asyncio.run(go())
    assert all(r.ok and len(r.chunk_ns) == 2 for r in recs), recs
    assert opened == 1


def test_close_delimited_body(raw: Callable[..., RawServer], make_request: MakeRequest) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    srv = raw(lambda c, r: (head + SSE_BODY[:-14], True))  # no [DONE] either
    rec = run_one(srv.base_url, make_request())
    assert rec.ok and len(rec.chunk_ns) == 2 and rec.finish_reason == "length"


def test_chunked_framing_split_everywhere(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    # Chunk boundaries unrelated to event boundaries, with a chunk extension and a trailer.
    parts = [SSE_BODY[:5], SSE_BODY[5:40], SSE_BODY[40:41], SSE_BODY[41:]]
    body = b"".join(b"%x;ext=1\r\n%b\r\n" % (len(p), p) for p in parts) + b"0\r\nX-T: 1\r\n\r\n"
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    srv = raw(lambda c, r: (head + body, False))
    rec = run_one(srv.base_url, make_request())
    assert rec.ok and len(rec.chunk_ns) == 2


def test_non_stream_200_error_object(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    body = b'{"error": {"message": "model not found"}}'
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
    srv = raw(lambda c, r: (head % len(body) + body, False))
    rec = run_one(srv.base_url, make_request())
    assert rec.error_kind == "stream_error" and "model not found" in (rec.error or "")


def test_garbage_status_line_is_malformed(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    srv = raw(lambda c, r: (b"SSH-2.0-OpenSSH\r\n\r\n", True))
    rec = run_one(srv.base_url, make_request())
    assert rec.error_kind == "malformed"


def test_closed_before_status_line(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    srv = raw(lambda c, r: None)
    rec = run_one(srv.base_url, make_request())
    assert rec.error_kind == "connection" and "before the status line" in (rec.error or "")


def test_stale_keep_alive_connection_is_retried_once(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    # Each connection answers its first request and then closes on the second
    # without a reply (a keep-alive timeout racing the next request).
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
    srv = raw(lambda c, r: (head % len(SSE_BODY) + SSE_BODY, False) if r == 1 else None)

    async def go() -> tuple[list[RequestRecord], int]:
        async with ConnectionPool(srv.base_url) as pool:
            recs = [await send(srv.base_url, make_request(i), pool=pool) for i in range(3)]
            return recs, pool.connections_opened

    recs, opened = asyncio.run(go())
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert opened == 3


def test_a_retry_goes_out_on_a_new_connection_not_another_stale_one(
    raw: Callable[..., RawServer], make_request: MakeRequest
) -> None:
    # Two idle connections, both closed by the server on their next request (a keep-alive
    # timeout that hit them together): the retry must not take the second stale one.
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n"
    srv = raw(lambda c, r: (head % len(SSE_BODY) + SSE_BODY, False) if r == 1 else None)

    async def go() -> tuple[RequestRecord, int]:
        async with ConnectionPool(srv.base_url) as pool:
            pair = [send(srv.base_url, make_request(i), pool=pool) for i in range(2)]
            assert all(r.ok for r in await asyncio.gather(*pair))
            assert len(pool._idle) == 2
            rec = await send(srv.base_url, make_request(2), pool=pool)
            return rec, pool.connections_opened

    rec, opened = asyncio.run(go())
    assert rec.ok, rec.error
    assert opened == 3  # the two stale ones, then one new for the retry


def test_thread_server_and_tokenize_models_health(make_request: MakeRequest) -> None:
    import urllib.request

    with SSETestServer(ttft_ms=5) as srv:
        req = urllib.request.Request(
            srv.base_url + "/tokenize",
            data=json.dumps({"prompt": "a b  c"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            tok = json.loads(r.read())
        assert tok["count"] == 3 and len(tok["tokens"]) == 3
        with urllib.request.urlopen(srv.base_url + "/v1/models", timeout=5) as r:
            assert json.loads(r.read())["data"][0]["id"] == "test-model"
        with urllib.request.urlopen(srv.base_url + "/health", timeout=5) as r:
            assert r.status == 200
        rec = run_one(srv.base_url, make_request(max_tokens=4))
        assert rec.ok and ms(rec.chunk_ns[0] - rec.send_ns) >= 5.0


def test_https(tmp_path: Path, make_request: MakeRequest) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl not available to make a test certificate")
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    args = "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
    args += " -addext subjectAltName=IP:127.0.0.1"
    cmd = [openssl, *args.split(), "-keyout", str(key), "-out", str(cert)]
    subprocess.run(cmd, check=True, capture_output=True)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    with SSETestServer(ssl_context=server_ctx) as srv:
        assert srv.base_url.startswith("https://")

        async def go() -> tuple[list[RequestRecord], int]:
            async with ConnectionPool(srv.base_url, ssl_context=client_ctx) as pool:
                recs = [await send(srv.base_url, make_request(i, 20), pool=pool) for i in range(3)]
                return recs, pool.connections_opened

        recs, opened = asyncio.run(go())
        assert all(r.ok and len(r.chunk_ns) == 20 for r in recs), [r.error for r in recs]
        assert opened == 1
        # An untrusted certificate is a connection failure, not an exception.
        rec = run_one(srv.base_url, make_request())
        assert rec.error_kind == "connection" and "CERTIFICATE_VERIFY_FAILED" in (rec.error or "")


def test_pool_rejects_bad_urls_and_headers() -> None:
    with pytest.raises(ValueError):
        ConnectionPool("ftp://host")
    with pytest.raises(ValueError):
        ConnectionPool("http://h:1", headers={"X-A": "1\r\nX-B: 2"})
    pool = ConnectionPool("http://h:8000/prefix/", headers={"Authorization": "Bearer k"})
    req = pool.request_bytes("/v1/completions", b"{}")
    assert req.startswith(b"POST /prefix/v1/completions HTTP/1.1\r\nHost: h:8000\r\n")
    assert b"Authorization: Bearer k\r\n" in req and req.endswith(b"Content-Length: 2\r\n\r\n{}")
