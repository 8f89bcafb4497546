"""A scripted OpenAI-compatible streaming server for tests and benchmarks.

It answers ``/v1/completions`` and ``/v1/chat/completions`` (streamed or
not), ``/v1/models``, ``/health`` and ``/tokenize`` with fixed timing:
the first content chunk ``ttft_ms`` after the request arrived, then one
chunk every ``itl_ms`` (chunk ``i`` is scheduled at ``t0 + ttft + i*itl``
on the loop clock, so delays do not drift). The output length is
``max_tokens`` (or ``natural_len`` when ``ignore_eos`` is off), in chunks of
``tokens_per_chunk`` tokens. Failures are scripted per server or per
request.

Per-request knobs: a JSON object under the body key ``x_test`` overrides
any :class:`ServerKnobs` field for that request, e.g.
``{"x_test": {"ttft_ms": 40, "fail": "drop", "fail_after": 3}}``.

It is an ``asyncio.Protocol`` that writes pre-encoded frames, so it costs
little CPU (:mod:`inferx_core.testing.server`, :mod:`~inferx_core.testing.stream`;
the knobs are :mod:`inferx_core.testing.knobs`). Use it

* in-process on a background thread: ``with SSETestServer(ttft_ms=40) as s: s.base_url``
* as a separate process (keeps its CPU and GIL out of the measured client):
  ``with ServerProcess(itl_ms=10) as s: s.base_url``, or
  ``python -m inferx_core.testing.sse_server --port 8000 --ttft-ms 40 --itl-ms 10``
  (prints ``SSE_SERVER_READY <base_url>`` once listening).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from inferx_core.testing.knobs import FAIL_MODES, OVERLOAD_MODES, ServerKnobs
from inferx_core.testing.server import SSETestServer

__all__ = ["FAIL_MODES", "READY_LINE", "SSETestServer", "ServerKnobs", "ServerProcess", "main"]

READY_LINE = "SSE_SERVER_READY"


def _src_root() -> str:
    # .../src/inferx_core/testing/sse_server.py -> .../src, so a child
    # process finds the package even when it is not installed.
    return str(Path(__file__).resolve().parents[2])


def _capacity_argv(k: ServerKnobs) -> list[str]:
    """The flags of a server's known capacity, its overload, death and drift."""
    argv = []
    if k.max_concurrent is not None:
        argv += ["--max-concurrent", str(k.max_concurrent), "--overload", k.overload]
    if k.die_after is not None:
        argv += ["--die-after", str(k.die_after)]
    if k.drift_ms:
        argv += ["--drift-ms", str(k.drift_ms)]
    if k.tokenize_factor != 1:
        argv += ["--tokenize-factor", str(k.tokenize_factor)]
    if k.tokenize_id is not None:
        argv += ["--tokenize-id", str(k.tokenize_id)]
    return argv


class ServerProcess:
    """The server in a child process (its own interpreter, CPU and GIL)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **knobs: Any) -> None:
        self.host = host
        self.port = port
        self.knobs = dataclasses.replace(ServerKnobs(), **knobs)
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def argv(self) -> list[str]:
        k = self.knobs
        argv = [
            sys.executable,
            "-m",
            "inferx_core.testing.sse_server",
            "--host",
            self.host,
            "--port",
            str(self.port),
        ]
        argv += [
            "--ttft-ms",
            str(k.ttft_ms),
            "--itl-ms",
            str(k.itl_ms),
            "--tokens-per-chunk",
            str(k.tokens_per_chunk),
        ]
        argv += ["--usage", k.usage, "--model", k.model, "--max-model-len", str(k.max_model_len)]
        if k.fail:
            argv += ["--fail", k.fail]
        if k.fail_after is not None:
            argv += ["--fail-after", str(k.fail_after)]
        if k.natural_len is not None:
            argv += ["--natural-len", str(k.natural_len)]
        if not k.role_chunk:
            argv.append("--no-role-chunk")
        if k.comments:
            argv.append("--comments")
        if k.stamp:
            argv.append("--stamp")
        for flag, value in (
            ("--usage-completion", k.usage_completion),
            ("--usage-prompt", k.usage_prompt),
        ):
            if value is not None:
                argv += [flag, json.dumps(value)]
        if k.hold_open:
            argv.append("--hold-open")
        if k.long_line_bytes:
            argv += ["--long-line-bytes", str(k.long_line_bytes)]
        return argv + _capacity_argv(k)

    def __enter__(self) -> ServerProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_src_root(), env.get("PYTHONPATH", "")) if p
        )
        self.proc = subprocess.Popen(
            self.argv(), stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(READY_LINE):
            self.__exit__()
            raise RuntimeError(f"test server did not start (got {line!r})")
        self.base_url = line.split()[1]
        self.port = int(self.base_url.rsplit(":", 1)[1])
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None


def _add_hostile_flags(ap: argparse.ArgumentParser) -> None:
    """Flags of a server that misbehaves on purpose (usage that lies, replies left open)."""
    ap.add_argument(
        "--usage-completion",
        type=json.loads,
        default=None,
        help="hostile: report this JSON value as usage.completion_tokens (e.g. 1, -20, 3.7, "
        "'\"7\"')",
    )
    ap.add_argument(
        "--usage-prompt",
        type=json.loads,
        default=None,
        help="hostile: report this JSON value as usage.prompt_tokens",
    )
    ap.add_argument(
        "--hold-open",
        action="store_true",
        help="hostile: end each reply but never its HTTP body (no last chunk; connection open)",
    )
    ap.add_argument(
        "--long-line-bytes",
        type=int,
        default=0,
        help="hostile: pad the first content chunk with this many bytes (one long SSE line)",
    )


def _add_capacity_flags(ap: argparse.ArgumentParser) -> None:
    """A known capacity, what the server does past it, when it dies, how it drifts."""
    ap.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="a known capacity: at most N generations at once, the rest wait (TTFT grows)",
    )
    ap.add_argument(
        "--overload",
        choices=OVERLOAD_MODES,
        default="queue",
        help="past --max-concurrent: wait for a slot (queue), refuse (http_503, http_429), or "
        "shed (one token and finish_reason stop at once, ignoring ignore_eos)",
    )
    ap.add_argument(
        "--die-after",
        type=int,
        default=None,
        help="after N generation requests close the listener and drop every connection",
    )
    ap.add_argument(
        "--drift-ms",
        type=float,
        default=0.0,
        help="each generation's TTFT grows by this much per generation started before it",
    )
    ap.add_argument(
        "--tokenize-factor",
        type=int,
        default=1,
        help="hostile: /tokenize counts every prompt this many times over",
    )
    ap.add_argument(
        "--tokenize-id",
        type=int,
        default=None,
        help="hostile: /tokenize reports every token id as this integer",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line: every ServerKnobs default, and what it prints when ready."""
    ap = argparse.ArgumentParser(
        prog="python -m inferx_core.testing.sse_server",
        description=__doc__.split("\n")[0]
        + " Serves /v1/completions, /v1/chat/completions, /v1/models, /health and /tokenize "
        "with scripted timing and failures. Once listening it prints one line to stdout, "
        f"'{READY_LINE} <base_url>' (e.g. '{READY_LINE} http://127.0.0.1:8000'): wait for it, "
        "then send requests. SIGINT/SIGTERM stop it.",
        epilog='Per request, a JSON object under the body key "x_test" overrides any of these '
        'settings, e.g. {"x_test": {"ttft_ms": 40, "fail": "drop", "fail_after": 3}}. '
        "From Python: inferx_core.testing.ServerProcess (a subprocess) or SSETestServer "
        "(in-process).",
    )
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (%(default)s)")
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port (%(default)s)")
    ap.add_argument(
        "--ttft-ms", type=float, default=0.0, help="request received -> first content chunk"
    )
    ap.add_argument("--itl-ms", type=float, default=0.0, help="between two content chunks")
    ap.add_argument("--tokens-per-chunk", type=int, default=1, help="tokens in each chunk")
    ap.add_argument(
        "--usage",
        choices=["final", "finish", "none", "continuous"],
        default="final",
        help="where usage goes: a final empty-choices chunk, the finish_reason chunk, nowhere, "
        "or every chunk cumulatively (like vLLM's continuous_usage_stats)",
    )
    ap.add_argument("--fail", choices=FAIL_MODES, default=None, help="fail every request so")
    ap.add_argument(
        "--fail-after",
        type=int,
        default=None,
        help="content chunks sent before a mid-stream failure (default: half)",
    )
    ap.add_argument(
        "--natural-len",
        type=int,
        default=None,
        help="output length when a request does not set ignore_eos (default: max_tokens)",
    )
    ap.add_argument(
        "--no-role-chunk", action="store_true", help="chat: no role-only chunk before TTFT"
    )
    ap.add_argument("--comments", action="store_true", help="send a ': ping' comment at once")
    ap.add_argument(
        "--stamp",
        action="store_true",
        help="put the server's perf_counter_ns in each chunk (x_sent_ns, x_recv_ns)",
    )
    _add_hostile_flags(ap)
    _add_capacity_flags(ap)
    ap.add_argument("--model", default="test-model", help="served model name (%(default)s)")
    ap.add_argument("--max-model-len", type=int, default=131072, help="context /v1/models reports")
    return ap


def knobs_from_args(a: argparse.Namespace) -> ServerKnobs:
    """The server's behaviour from :func:`build_parser`'s arguments."""
    return ServerKnobs(
        ttft_ms=a.ttft_ms,
        itl_ms=a.itl_ms,
        tokens_per_chunk=a.tokens_per_chunk,
        usage=a.usage,
        fail=a.fail,
        fail_after=a.fail_after,
        natural_len=a.natural_len,
        role_chunk=not a.no_role_chunk,
        comments=a.comments,
        stamp=a.stamp,
        model=a.model,
        max_model_len=a.max_model_len,
        usage_completion=a.usage_completion,
        usage_prompt=a.usage_prompt,
        hold_open=a.hold_open,
        long_line_bytes=a.long_line_bytes,
        max_concurrent=a.max_concurrent,
        overload=a.overload,
        die_after=a.die_after,
        drift_ms=a.drift_ms,
        tokenize_factor=a.tokenize_factor,
        tokenize_id=a.tokenize_id,
    )


def serve_until_signal(server: SSETestServer) -> None:
    """Start ``server``, print the ready line, serve until SIGINT/SIGTERM."""

    async def run() -> None:
        await server.start()
        print(f"{READY_LINE} {server.base_url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(run())


def main(argv: list[str] | None = None) -> None:
    a = build_parser().parse_args(argv)
    serve_until_signal(SSETestServer(a.host, a.port, knobs_from_args(a)))


if __name__ == "__main__":
    main()
