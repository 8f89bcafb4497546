"""Client CPU per 1000 streamed chunks, and TTFT error under bursty restarts.

Usage::

    PYTHONPATH=src python benchmarks/client_overhead.py [--requests 256] [--repeats 3]

Part 1 (overhead): a zero-delay scripted server runs in a separate process;
concurrency 64, 256-token outputs (one token per chunk). For each client
(InferX's asyncio-protocol client, aiohttp, httpx; same JSON parsing and
chunk classification for all) it measures this process's CPU time
(``time.process_time``: user + system, all threads) over the load window,
per 1000 content chunks.

Part 2 (timing): a server with TTFT 40 ms / ITL 10 ms; closed loop at
concurrency 4 and 32 with identical requests, so all streams finish and
restart together every round (the burst that starves an event loop). The
TTFT error is measured TTFT minus the injected 40 ms; it includes the
server's own timer lateness (its asyncio timers fire up to ~1 ms late), so
the client's own share is smaller. ``lag`` is the client's receive lag:
arrival stamp minus the server's ``perf_counter_ns()`` right before it
wrote the chunk (same host, same CLOCK_MONOTONIC).

With a zero-delay server, reads coalesce whenever the client falls behind,
so the figure favours slower clients; ``--itl-ms 5`` paces the chunks so
every chunk is its own read (the realistic case, and the harder one).

Goals: <= 12 ms CPU per 1k chunks; mean TTFT error at c=32 < 3 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import aiohttp
import httpx

from inferx_core.load.client import (
    COMPLETIONS_PATH,
    ConnectionPool,
    build_completions_payload,
)
from inferx_core.load.records import RequestRecord
from inferx_core.load.scheduler import LoadConfig, PreparedRequest, run_load
from inferx_core.load.sse import StreamDecoder, classify_payload
from inferx_core.testing import ServerProcess

Runner = Callable[[str, list[PreparedRequest], int], Awaitable[None]]


def _handle_line(line: bytes, rec: RequestRecord, t: int) -> bool:
    """What typical tools do per SSE line: strip, parse JSON, classify. True at [DONE]."""
    line = line.strip()
    if not line.startswith(b"data:"):
        return False
    data = line[5:].strip()
    if data == b"[DONE]":
        return True
    obj = json.loads(data)
    _note_stamps(rec, obj)
    info = classify_payload(obj)
    if info.content:
        rec.chunk_ns.append(t)
    if info.completion_tokens is not None:
        rec.usage_output_tokens = info.completion_tokens
    return False


async def _workers(reqs: list[PreparedRequest], concurrency: int, one) -> None:
    it = iter(reqs)

    async def worker() -> None:
        for req in it:
            await one(req)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def run_inferx(base_url: str, reqs: list[PreparedRequest], concurrency: int) -> None:
    async with ConnectionPool(base_url) as pool:
        await run_load(
            pool, reqs, LoadConfig(max_concurrency=concurrency, timeout_s=120, freeze_gc=False)
        )


async def run_aiohttp(base_url: str, reqs: list[PreparedRequest], concurrency: int) -> None:
    headers = {"Content-Type": "application/json"}
    conn = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=conn, timeout=timeout) as session:

        async def one(req: PreparedRequest) -> None:
            rec = req.record
            rec.send_ns = time.perf_counter_ns()
            async with session.post(base_url + req.path, data=req.payload, headers=headers) as r:
                rec.status_code = r.status
                async for line in r.content:  # line by line, like vLLM's bench
                    if _handle_line(line, rec, time.perf_counter_ns()):
                        break
            rec.end_ns = time.perf_counter_ns()

        await _workers(reqs, concurrency, one)


async def run_httpx(base_url: str, reqs: list[PreparedRequest], concurrency: int) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def one(req: PreparedRequest) -> None:
            rec = req.record
            rec.send_ns = time.perf_counter_ns()
            async with client.stream(
                "POST", base_url + req.path, content=req.payload, headers=headers
            ) as r:
                rec.status_code = r.status_code
                async for line in r.aiter_lines():
                    if _handle_line(line.encode(), rec, time.perf_counter_ns()):
                        break
            rec.end_ns = time.perf_counter_ns()

        await _workers(reqs, concurrency, one)


RUNNERS: dict[str, Runner] = {"inferx": run_inferx, "aiohttp": run_aiohttp, "httpx": run_httpx}


def make_requests(n: int, osl: int, extra: dict | None = None) -> list[PreparedRequest]:
    payload = build_completions_payload(
        "test-model", "hello " * 64, osl, extra_body={"x_test": extra} if extra else None
    )
    return [PreparedRequest(COMPLETIONS_PATH, payload, RequestRecord(i, 64, osl)) for i in range(n)]


def overhead(args: argparse.Namespace) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in args.clients}
    with ServerProcess(itl_ms=args.itl_ms) as srv:
        # Warm both sides (imports, first connections) before measuring.
        for name in args.clients:
            asyncio.run(RUNNERS[name](srv.base_url, make_requests(64, 16), 64))
        for _ in range(args.repeats):
            for name in args.clients:
                reqs = make_requests(args.requests, args.osl)
                gc.collect()
                c0, w0 = time.process_time(), time.perf_counter()
                asyncio.run(RUNNERS[name](srv.base_url, reqs, args.concurrency))
                cpu, wall = time.process_time() - c0, time.perf_counter() - w0
                chunks = sum(len(r.record.chunk_ns) for r in reqs)
                bad = sum(1 for r in reqs if len(r.record.chunk_ns) != args.osl)
                if bad:
                    print(f"  warning: {name}: {bad} requests without {args.osl} chunks")
                out[name].append(cpu * 1e3 / (chunks / 1000))
                print(
                    f"  {name:8s} cpu {cpu:6.2f} s  wall {wall:6.2f} s  chunks {chunks}  "
                    f"-> {out[name][-1]:6.1f} ms CPU / 1k chunks"
                )
    return out


def ttft_error(args: argparse.Namespace) -> list[tuple]:
    rows = []
    ttft_ms, itl_ms = 40.0, 10.0
    undo = _patch_stamp_capture()
    try:
        with ServerProcess(ttft_ms=ttft_ms, itl_ms=itl_ms, stamp=True) as srv:
            asyncio.run(run_inferx(srv.base_url, make_requests(8, 4), 8))  # warm
            for conc in args.ttft_concurrency:
                for name in args.ttft_clients:
                    reqs = make_requests(conc * args.rounds, args.ttft_osl)
                    _STAMPS.clear()
                    asyncio.run(RUNNERS[name](srv.base_url, reqs, conc))
                    rows.append((name, conc, *_ttft_stats(reqs, ttft_ms, itl_ms)))
    finally:
        undo()
    return rows


def _ttft_stats(reqs: list[PreparedRequest], ttft_ms: float, itl_ms: float) -> tuple:
    recs = [r.record for r in reqs if r.record.chunk_ns]
    ttft = {id(r): (r.chunk_ns[0] - r.send_ns) / 1e6 for r in recs}
    first = {id(r): r.chunk_ns[0] for r in recs}
    err = [t - ttft_ms for t in ttft.values()]
    # The server's actual TTFT (request arrival -> first chunk written) and
    # what the client adds to it: request delivery + receive lag.
    srv_late = [(sent - recv) / 1e6 - ttft_ms for recv, sent in _STAMPS.values()]
    client = [ttft[k] - (sent - recv) / 1e6 for k, (recv, sent) in _STAMPS.items() if k in ttft]
    # Receive lag alone: first chunk's arrival stamp minus the server's write stamp.
    lag = [(first[k] - sent) / 1e6 for k, (_, sent) in _STAMPS.items() if k in first]
    itl = [(b - a) / 1e6 for r in recs for a, b in itertools.pairwise(r.chunk_ns)]
    return (
        len(recs),
        statistics.mean(err),
        statistics.median(err),
        _pct(err, 99),
        statistics.mean(srv_late),
        statistics.mean(client),
        _pct(client, 99),
        statistics.mean(lag),
        _pct(lag, 99),
        statistics.mean(itl) - itl_ms,
    )


# id(record) -> (x_recv_ns, x_sent_ns) of its first content chunk.
_STAMPS: dict[int, tuple[int, int]] = {}


def _note_stamps(rec: RequestRecord, obj: object) -> None:
    if not rec.chunk_ns and isinstance(obj, dict) and "x_sent_ns" in obj:
        _STAMPS[id(rec)] = (obj["x_recv_ns"], obj["x_sent_ns"])


def _patch_stamp_capture() -> Callable[[], None]:
    """Capture the test server's stamps in InferX's decoder too; returns the undo.

    Wraps StreamDecoder._on_event for this benchmark only: the production
    decoder never reads the test server's x_* fields.
    """
    orig = StreamDecoder._on_event

    def on_event(self: StreamDecoder, data: str, t_ns: int) -> int:
        if not self.record.chunk_ns and data.startswith("{"):
            _note_stamps(self.record, json.loads(data))
        return orig(self, data, t_ns)

    StreamDecoder._on_event = on_event  # type: ignore[method-assign]
    return lambda: setattr(StreamDecoder, "_on_event", orig)


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=256, help="requests per overhead run")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--itl-ms",
        type=float,
        default=0.0,
        help="0: zero-delay server (reads coalesce when the client lags); >0: paced chunks",
    )
    ap.add_argument("--clients", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    ap.add_argument("--ttft-clients", nargs="+", default=["inferx", "aiohttp"])
    ap.add_argument("--ttft-concurrency", type=int, nargs="+", default=[4, 32])
    ap.add_argument("--rounds", type=int, default=4, help="requests per worker in the TTFT runs")
    ap.add_argument("--ttft-osl", type=int, default=128)
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-ttft", action="store_true")
    args = ap.parse_args()

    if not args.skip_overhead:
        print(
            f"== client CPU, {'zero-delay' if not args.itl_ms else f'ITL {args.itl_ms:g} ms'} "
            f"server (separate process), c={args.concurrency}, "
            f"{args.requests} requests x {args.osl} chunks, {args.repeats} repeats"
        )
        res = overhead(args)
        print(f"\n{'client':10s} {'median':>8s} {'min':>8s}   ms CPU per 1000 chunks")
        for name, vals in res.items():
            print(f"{name:10s} {statistics.median(vals):8.1f} {min(vals):8.1f}")
    if not args.skip_ttft:
        print(
            f"\n== TTFT error, server TTFT 40 ms / ITL 10 ms, {args.ttft_osl}-token outputs, "
            f"{args.rounds} rounds per worker"
        )
        rows = ttft_error(args)
        print(
            "TTFT-40: measured TTFT minus the injected 40 ms; srv late: the server's own\n"
            "lateness (its timers, its CPU); client: measured TTFT minus the server's actual\n"
            "TTFT (request delivery + receive lag; delivery includes the server reading a\n"
            "burst of requests one after another); lag: first chunk's arrival stamp minus\n"
            "the server's write stamp (the client's own lateness); all in ms"
        )
        print(
            f"{'client':8s} {'conc':>4s} {'n':>4s} | {'TTFT-40':>7s} {'p50':>6s} {'p99':>6s} | "
            f"{'srv late':>8s} | {'client':>6s} {'p99':>6s} | {'lag':>5s} {'p99':>5s} | "
            f"{'ITL-10':>6s}"
        )
        for name, conc, n, mean, p50, p99, late, cl, cl99, lag, lag99, itl_err in rows:
            print(
                f"{name:8s} {conc:4d} {n:4d} | {mean:7.2f} {p50:6.2f} {p99:6.2f} | "
                f"{late:8.2f} | {cl:6.2f} {cl99:6.2f} | {lag:5.2f} {lag99:5.2f} | {itl_err:6.2f}"
            )


if __name__ == "__main__":
    main()
