"""``vllm bench serve --save-result --save-detailed``: its per-request lists as records.

vLLM's lists are parallel, one entry per request: ``start_times`` (the
client's ``perf_counter()`` at send, seconds), ``ttfts`` and ``itls``
(seconds; an ITL per content chunk after the first), ``latencies``,
``input_lens``, ``output_lens`` (the server's usage where it reported one) and
``errors`` ("" for a success). Without ``start_times`` (vLLM before 0.11) the
requests are laid end to end from 0: latencies stay right, the in-flight
count and the window do not, and the checks that need them say so.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inferx_core.interop.tool_run import ToolRun, slug
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.validity import ValidityCheck

__all__ = ["empty_first_chunk_check", "has_detail", "vllm_records", "vllm_run"]

_NS = 1e9
#: Replies whose TTFT vLLM took at a chunk without a token, beyond which its TTFT (and
#: TPOT) figures are not the server's (as many as whole replies per read are allowed).
MAX_EARLY_TTFT_SHARE = 0.05


def has_detail(data: Mapping[str, Any]) -> bool:
    """True when the file carries ``--save-detailed``'s per-request lists."""
    return all(isinstance(data.get(k), list) for k in ("ttfts", "itls", "output_lens"))


def _record(i: int, data: Mapping[str, Any], start_s: float, max_tokens: int) -> RequestRecord:
    def at(key: str, default: Any = None) -> Any:
        values = data.get(key) or []
        return values[i] if i < len(values) else default

    error = at("errors") or None
    ttft, itls = at("ttfts") or 0.0, at("itls") or []
    usage = at("output_lens")
    send = round(start_s * _NS)
    chunks: list[int] = []
    if not error and ttft:
        t = send + round(ttft * _NS)
        chunks.append(t)
        for gap in itls:
            t += round(gap * _NS)
            chunks.append(t)
    if _role_chunk_first(usage, itls):
        chunks = chunks[1:]  # vLLM stamped a chunk without a token first (see below)
    latency = at("latencies")
    end = send + round(latency * _NS) if latency else (chunks[-1] if chunks else send)
    return RequestRecord(
        request_id=i,
        prompt_tokens=int(at("input_lens", 0) or 0),
        max_tokens=max_tokens,
        send_ns=send,
        chunk_ns=chunks,
        usage_output_tokens=int(usage) if usage and not error else None,
        usage_prompt_tokens=at("input_lens"),
        end_ns=max(end, chunks[-1] if chunks else end),
        error=str(error) if error else None,
        error_kind="stream_error" if error else None,
    )


def vllm_records(data: Mapping[str, Any], max_tokens: int = 0) -> list[RequestRecord]:
    n = len(data.get("ttfts") or [])
    starts = data.get("start_times")
    if not isinstance(starts, list) or len(starts) != n:
        latencies = data.get("latencies") or [0.0] * n
        starts, t = [], 0.0
        for latency in latencies:
            starts.append(t)
            t += float(latency or 0.0)
    return [_record(i, data, float(starts[i]), max_tokens) for i in range(n)]


def vllm_run(data: Mapping[str, Any], path: Path, date: str) -> ToolRun:
    """The file as one run; the requested output length comes from ``--metadata``
    (vLLM's file does not keep ``--random-output-len``) when a script put it there."""
    asked = data.get("random_output_len") or data.get("output_len")
    max_tokens = int(str(asked)) if str(asked or "").isdigit() else 0
    rate = str(data.get("request_rate", "inf"))
    conc = data.get("max_concurrency")
    closed = rate == "inf"
    run = ToolRun(
        tool="vllm bench serve",
        version=data.get("vllm_version"),
        path=path,
        point_id=slug(path.stem),
        date=date,
        records=vllm_records(data, max_tokens),
        mode="closed" if closed else "open",
        concurrency=conc,
        request_rate=None if closed else float(rate),
        arrival=None if closed else "poisson" if data.get("burstiness") in (1, 1.0) else None,
        requested_output_tokens=float(max_tokens) if max_tokens else None,
        reported_requests=_reported(data),
        model_id=data.get("model_id"),
        sources=[path],
        token_counts="vLLM's output_lens: the server's usage (else vLLM's own count)",
    )
    if not isinstance(data.get("start_times"), list):
        run.not_judged["concurrency_reached"] = (
            "no start_times in the file (vLLM before 0.11): when each request went out is unknown"
        )
    if not max_tokens:
        run.not_judged["output_length"] = (
            "a vLLM file does not keep --random-output-len (add --metadata random_output_len=N)"
        )
    run.not_judged.setdefault(
        "dispatch_lateness", "vLLM's file has no scheduled send times, only start_times"
    )
    check = empty_first_chunk_check(data)
    run.checks = [check] if check is not None else []
    return run


def _reported(data: Mapping[str, Any]) -> int | None:
    completed, failed = data.get("completed"), data.get("failed")
    if isinstance(completed, int) and isinstance(failed, int):
        return completed + failed
    return None


def _role_chunk_first(usage: Any, itls: list[float]) -> bool:
    """One chunk more than usage tokens: vLLM's chat client takes TTFT at the first chunk
    with ``choices``, content or not (vllm/benchmarks/lib/endpoint_request_func.py, 0.32),
    so a role-only first chunk is stamped as the first token."""
    return bool(usage) and bool(itls) and len(itls) == usage


def _early_ms(ttft: float, itls: list[float]) -> float:
    return itls[0] * 1000 if itls else 0.0


def empty_first_chunk_check(data: Mapping[str, Any]) -> ValidityCheck | None:
    """How many replies' vLLM TTFT is a content-less chunk's arrival, early by more than
    max(1 ms, 10% of the real TTFT): such a TTFT (and the TPOT computed from it) is not
    the server's. The records start at the first token either way."""
    itls, lens = data.get("itls") or [], data.get("output_lens") or []
    ttfts, errors = data.get("ttfts") or [], data.get("errors") or []
    n = min(len(itls), len(lens), len(ttfts))
    ok = [i for i in range(n) if not (errors[i : i + 1] or [""])[0] and ttfts[i]]
    if not ok:
        return None
    extra = [i for i in ok if _role_chunk_first(lens[i], itls[i])]
    early = [
        i for i in extra if _early_ms(ttfts[i], itls[i]) > max(1.0, 100 * (ttfts[i] + itls[i][0]))
    ]
    share = len(early) / len(ok)
    passed = share <= MAX_EARLY_TTFT_SHARE
    why = (
        f"{len(extra)} of {len(ok)} replies began with a chunk without a token (one chunk more "
        f"than usage), {len(early)} of them early by over max(1 ms, 10% of TTFT)"
    )
    if early:
        first = statistics.median(ttfts[i] + itls[i][0] for i in early) * 1000
        said = statistics.median(ttfts[i] for i in early) * 1000
        why += (
            f": vLLM's median TTFT of those is {said:.1f} ms, their first token came at "
            f"{first:.1f} ms (its TPOT is stretched by the gap)"
        )
    return ValidityCheck(
        name="first_chunk_without_token",
        value=share,
        limit=MAX_EARLY_TTFT_SHARE,
        passed=passed,
        why=why,
    )
