"""A point as the file ``vllm bench serve --save-result`` writes for the same run.

The file is recomputed from the per-request records with vLLM's own
definitions (``vllm/benchmarks/serve.py``, ``calculate_metrics``), not copied
from InferX's summary, so that a downstream script reading vLLM files sees
vLLM's numbers:

- a request succeeded when it streamed a content chunk and ended cleanly;
  failed requests count in ``failed`` and contribute 0 to ``output_lens``;
- E2E latency ends at the last content chunk (vLLM's ``most_recent_timestamp``;
  vLLM would also stamp an empty-text finish chunk, which the records do not keep);
- ``itl`` is the gap between consecutive content chunks; TPOT is
  ``(latency - ttft) / (output_tokens - 1)`` for requests with more than one token;
- an empty sample gives 0.0 for every statistic (``np.mean([] or 0)``), never null;
- percentiles are numpy's linear ones, the standard deviation the population one.

A speculative server's acceptance over the window is written under vLLM's own keys
and units (``spec_decode_acceptance_rate`` in percent, ``..._acceptance_length``,
``..._num_drafts``, ``..._draft_tokens``, ``..._accepted_tokens`` as integers,
``..._per_position_acceptance_rates`` as fractions), only when the window had draft
tokens, as vLLM writes them; they come from InferX's own counter window (its edges
interpolated between scrapes, so the counts are rounded), and a figure out of its
bounds is null there, never vLLM's impossible number.

A ramped open loop (``load.ramp``) also gets vLLM's ``rps_change_events``: the
ramp's start rate, then each whole rate as the ramp reaches it (the rate of
arrival i at progress i / (n - 1), as vLLM and InferX's scheduler compute it),
stamped with that arrival's scheduled wall-clock time (local ISO time, as vLLM
stamps it). With ``detailed``, ``generated_texts`` is one null per request:
InferX keeps no text, so the key is there and says so instead of inventing one.
The keys come in vLLM's order (its setup, its benchmark result, the ramp's
events, the speculative keys, then the statistics).

vLLM's file keeps none of its dataset flags; a script passes them as ``--metadata
random_output_len=N`` (what ``inferx audit`` reads to judge the reply lengths). For
a random workload the export writes them so: ``random_input_len`` and
``random_output_len`` (the workload's isl and osl), ``random_range_ratio`` (null
unless the lengths were drawn with vLLM's semantics: InferX's default draws from
``[floor(r*L), L]``, not vLLM's ``[L(1-r), L(1+r)]``), and ``ignore_eos``; for any
other workload they are absent, and ``inferx.notes`` says why.

The equivalent vLLM command has ``--percentile-metrics ttft,tpot,itl,e2el``
(plus ``client_queue_time,e2el_including_client_queue`` when a concurrency cap
is set) and ``--metric-percentiles`` set to the point's percentiles. The two
wall-clock window keys of InferenceX's fork are added; InferX's own facts go
under the single key ``inferx``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.arrivals import Ramp
from inferx_core.metrics.requests import short_reply
from inferx_core.metrics.stats import percentile_word
from inferx_core.results.flat import vllm_burstiness
from inferx_core.results.model import PointResultBase

#: Per-request lists vLLM removes unless ``--save-detailed`` is given.
DETAILED_KEYS: tuple[str, ...] = (
    "input_lens",
    "output_lens",
    "start_times",
    "ttfts",
    "itls",
    "generated_texts",
    "errors",
)
#: The namespaced key for InferX's own facts (nothing else is InferX's at the top level).
INFERX_KEY = "inferx"
#: vLLM's speculative-decoding keys (``vllm/benchmarks/serve.py``), in its order.
SPEC_DECODE_KEYS: tuple[str, ...] = (
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
)


@dataclass(frozen=True, slots=True)
class VllmOutput:
    """One request as vLLM's ``RequestFuncOutput`` would hold it (seconds)."""

    success: bool
    prompt_len: int
    output_tokens: int
    start_time: float
    ttft: float
    itl: tuple[float, ...]
    latency: float
    client_queue_time: float | None
    error: str

    @property
    def tpot(self) -> float | None:
        if self.output_tokens <= 1:
            return None
        return (self.latency - self.ttft) / (self.output_tokens - 1)


def vllm_output(
    rec: RequestRecord, *, window_start_ns: int, closed_loop: bool, ignore_eos: bool = False
) -> VllmOutput:
    """One record in vLLM's terms; ``closed_loop``: every request arrives at the window start.
    A reply cut short of what was asked is a failed request, as the point counted it
    (:func:`~inferx_core.metrics.requests.short_reply`), with the reason as its error."""
    short = short_reply(rec, ignore_eos)
    success = rec.ok and short is None
    chunks = rec.chunk_ns
    ttft = (chunks[0] - rec.send_ns) / 1e9 if success else 0.0
    latency = (chunks[-1] - rec.send_ns) / 1e9 if success else 0.0
    gaps = tuple((b - a) / 1e9 for a, b in itertools.pairwise(chunks)) if success else ()
    # vLLM's closed loop is "rate inf, max concurrency N": all requests arrive
    # at once and wait for a slot, so their queue time is the wait since the start.
    arrival_ns = window_start_ns if closed_loop else rec.scheduled_ns
    queue = None if arrival_ns is None else max(rec.send_ns - arrival_ns, 0) / 1e9
    prompt_len = (
        rec.usage_prompt_tokens if rec.usage_prompt_tokens is not None else rec.prompt_tokens
    )
    return VllmOutput(
        success=success,
        prompt_len=prompt_len,
        output_tokens=rec.output_tokens if success else 0,
        start_time=rec.send_ns / 1e9,
        ttft=ttft,
        itl=gaps,
        latency=latency,
        client_queue_time=queue,
        error=rec.error or short or "",
    )


def _stats(name: str, values: Sequence[float], percentiles: Sequence[float]) -> dict[str, float]:
    """vLLM's ``process_one_metric``: seconds in, milliseconds out, 0.0 for no sample."""
    sample: Any = list(values) or 0
    out = {
        f"mean_{name}_ms": float(np.mean(sample) * 1000),
        f"median_{name}_ms": float(np.median(sample) * 1000),
        f"std_{name}_ms": float(np.std(sample) * 1000),
    }
    for p in percentiles:
        out[f"p{percentile_word(p)}_{name}_ms"] = float(np.percentile(sample, p) * 1000)
    return out


def _peaks(outputs: Sequence[VllmOutput]) -> tuple[float, int]:
    """vLLM's ``max_output_tokens_per_s`` (chunks per 1 s bucket) and peak concurrency."""
    ok = [o for o in outputs if o.success]
    if not ok:
        return 0.0, 0
    t0 = min(o.start_time for o in ok)
    t1 = max(o.start_time + o.latency for o in ok)
    buckets = int(np.ceil(t1 - t0)) + 1
    tokens = np.zeros(buckets)
    running = np.zeros(buckets)
    for o in ok:
        t = o.start_time + o.ttft
        times = [t]
        for gap in o.itl:
            t += gap
            times.append(t)
        for when in times:
            b = int(when - t0)
            if 0 <= b < buckets:
                tokens[b] += 1
        for second in range(int(o.start_time - t0), int(o.start_time + o.latency - t0) + 1):
            running[second] += 1
    return float(np.max(tokens)), int(np.max(running))


def _good(outputs: Sequence[VllmOutput], slo: Mapping[str, float]) -> int:
    """vLLM's goodput count: ttft/tpot/e2el within their SLOs (tpot 0 for one token)."""
    limits = {k: slo[f"{k}_ms"] / 1000 for k in ("ttft", "tpot", "e2el") if f"{k}_ms" in slo}
    good = 0
    for o in outputs:
        if not o.success:
            continue
        value = {"ttft": o.ttft, "tpot": o.tpot or 0.0, "e2el": o.latency}
        if all(value[k] <= limit for k, limit in limits.items()):
            good += 1
    return good


def _totals(outputs: Sequence[VllmOutput], duration: float, slo: Mapping[str, float]) -> dict:
    ok = [o for o in outputs if o.success]
    total_in = sum(o.prompt_len for o in ok)
    total_out = sum(o.output_tokens for o in ok)
    has_slo = any(f"{k}_ms" in slo for k in ("ttft", "tpot", "e2el"))
    return {
        "duration": duration,
        "completed": len(ok),
        "failed": len(outputs) - len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration,
        "request_goodput": _good(outputs, slo) / duration if has_slo else None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
    }


def _per_request(outputs: Sequence[VllmOutput]) -> dict[str, Any]:
    queue = [o.client_queue_time for o in outputs]
    return {
        "input_lens": [o.prompt_len for o in outputs],
        "output_lens": [o.output_tokens for o in outputs],
        "ttfts": [o.ttft for o in outputs],
        "itls": [list(o.itl) for o in outputs],
        "latencies": [o.latency for o in outputs],
        "start_times": [o.start_time for o in outputs],
        "queue_times": None if None in queue else queue,
        "generated_texts": [None] * len(outputs),  # not kept (the notes say so)
        "errors": [o.error for o in outputs],
    }


def _latency_stats(
    outputs: Sequence[VllmOutput], percentiles: Sequence[float], *, capped: bool, open_loop: bool
) -> dict[str, float]:
    ok = [o for o in outputs if o.success]
    out = _stats("ttft", [o.ttft for o in ok], percentiles)
    out |= _stats("tpot", [t for o in ok if (t := o.tpot) is not None], percentiles)
    out |= _stats("itl", [gap for o in ok for gap in o.itl], percentiles)
    out |= _stats("e2el", [o.latency for o in ok], percentiles)
    queue = [o.client_queue_time for o in ok]
    if capped and None not in queue:
        waits = [q for q in queue if q is not None]
        out |= _stats("client_queue_time", waits, percentiles)
        if open_loop:
            inclusive = [o.latency + w for o, w in zip(ok, waits, strict=False)]
            out |= _stats("e2el_including_client_queue", inclusive, percentiles)
    return out


def _local_date(iso: str | None) -> str:
    """vLLM's ``date``: local time as ``%Y%m%d-%H%M%S`` (when the run finished)."""
    when = dt.datetime.fromisoformat(iso) if iso else dt.datetime.now(dt.timezone.utc)
    return when.astimezone().strftime("%Y%m%d-%H%M%S")


def _setup(result: PointResultBase, metadata: Mapping[str, str]) -> dict[str, Any]:
    ident, load, prov = result.identity, result.load, result.provenance
    assert load is not None
    config = prov.config or {}
    api = result.workload.api if result.workload is not None else None
    backend = "openai-chat" if api == "chat" else "openai"
    tokenizer = (config.get("workload") or {}).get("tokenizer")
    arrival_constant = ident.mode == "open" and load.arrival == "constant"
    setup: dict[str, Any] = {
        "date": _local_date(ident.finished_at or ident.date),
        "endpoint_type": backend,
        "backend": backend,
        "label": config.get("name"),
        "model_id": prov.model_id,
        "tokenizer_id": str(tokenizer) if tokenizer else prov.model_id,
        "num_prompts": load.num_prompts_planned or load.num_prompts,
    }
    setup.update(workload_keys(result)[0])
    setup.update(metadata)  # the user's --metadata wins, as vLLM applies its own last
    rate = ident.request_rate
    setup["request_rate"] = "inf" if rate is None or math.isinf(rate) else rate
    # vLLM's arrivals are gamma with shape = burstiness (1: Poisson); evenly
    # spaced arrivals are its limit as the shape grows without bound.
    load_cfg = config.get("load") or {}
    burstiness = vllm_burstiness(ident.mode, load.arrival, config)
    setup["burstiness"] = "inf" if arrival_constant or burstiness is None else burstiness
    setup["max_concurrency"] = ident.max_concurrency
    if load_cfg.get("ramp") and ident.mode == "open":
        setup["ramp_up_strategy"] = load_cfg["ramp"]
        setup["ramp_up_start_rps"] = load_cfg.get("ramp_start_rps")
        setup["ramp_up_end_rps"] = rate
    return setup


def workload_keys(result: PointResultBase) -> tuple[dict[str, Any], str | None]:
    """vLLM's random-dataset flags as ``--metadata`` carries them, and why any is
    absent or null (see the module doc): without them the audit cannot judge the
    reply lengths of InferX's own export."""
    workload = result.workload
    spec = workload.spec if workload is not None else {}
    kind = spec.get("kind")
    if workload is None or kind != "random":
        return {}, (
            f"random_input_len/random_output_len: absent: the workload is {kind or 'unknown'}, "
            "not a random one (its lengths are the prompts')"
        )
    keys: dict[str, Any] = {
        "random_input_len": spec.get("isl"),
        "random_output_len": spec.get("osl"),
    }
    semantics = workload.range_semantics or spec.get("semantics")
    ratio = spec.get("range_ratio")
    keys["random_range_ratio"] = (
        ratio if semantics == "vllm" else 0.0 if semantics == "fixed" else None
    )
    keys["ignore_eos"] = workload.ignore_eos
    if keys["random_range_ratio"] is None:
        return keys, (
            f"random_range_ratio: null: the lengths were drawn with {semantics} semantics "
            f"(range_ratio {ratio}), which vLLM's --random-range-ratio does not express"
        )
    return keys, None


def vllm_bench_result(
    result: PointResultBase,
    records: Sequence[RequestRecord],
    *,
    metadata: Mapping[str, str] | None = None,
    detailed: bool = False,
) -> dict[str, Any]:
    """The vLLM ``bench serve`` result JSON of one measured point (see the module doc)."""
    if result.load is None or result.latency is None:
        raise ValueError(f"{result.point_id}: nothing was measured ({result.failure_reason})")
    load = result.load
    measured = [r for r in records if not r.warmup]
    closed = result.identity.mode == "closed"
    window_start = min((r.send_ns for r in measured), default=0)
    eos = result.workload is not None and result.workload.ignore_eos is True
    outputs = [
        vllm_output(r, window_start_ns=window_start, closed_loop=closed, ignore_eos=eos)
        for r in measured
    ]
    duration = load.duration if load.duration is not None and load.duration > 0 else math.nan
    out = _setup(result, metadata or {})
    out |= _totals(outputs, duration, load.slo)
    out |= _per_request(outputs)
    peak_tokens, peak_running = _peaks(outputs)
    out |= {"max_output_tokens_per_s": peak_tokens, "max_concurrent_requests": peak_running}
    out["rtfx"] = 0.0  # audio only
    events = rps_change_events(result, measured, window_start)
    if events is not None:
        out["rps_change_events"] = events
    out |= spec_decode_fields(result)  # vLLM writes these before its statistics
    out |= _latency_stats(
        outputs,
        result.latency.percentiles,
        capped=result.identity.max_concurrency is not None,
        open_loop=not closed,
    )
    if not detailed:
        for key in DETAILED_KEYS:
            out.pop(key, None)
    out["benchmark_start_time_unix"] = load.benchmark_start_time_unix
    out["benchmark_end_time_unix"] = load.benchmark_end_time_unix
    out[INFERX_KEY] = _inferx_facts(result, outputs, detailed)
    return out


def _ramp(result: PointResultBase) -> tuple[str, float] | None:
    """(kind, start rps) of a ramped open-loop point, else None."""
    load_cfg = (result.provenance.config or {}).get("load") or {}
    kind, start = load_cfg.get("ramp"), load_cfg.get("ramp_start_rps")
    if result.identity.mode != "open" or kind not in ("linear", "exponential"):
        return None
    return (kind, float(start)) if isinstance(start, (int, float)) and start > 0 else None


def rps_change_events(
    result: PointResultBase, measured: Sequence[RequestRecord], window_start_ns: int
) -> list[dict[str, Any]] | None:
    """vLLM's ``rps_change_events`` of a ramped point (see the module doc); None unramped."""
    ramp, rate, start_unix = _ramp(result), result.identity.request_rate, None
    if result.load is not None:
        start_unix = result.load.benchmark_start_time_unix
    if ramp is None or rate is None or start_unix is None or not measured:
        return None
    arrivals = sorted(r.send_ns if r.scheduled_ns is None else r.scheduled_ns for r in measured)
    shape = Ramp(ramp[0], ramp[1], len(arrivals))  # type: ignore[arg-type]  # checked in _ramp

    def stamp(ns: int) -> str:
        return dt.datetime.fromtimestamp(start_unix + (ns - window_start_ns) / 1e9).isoformat()

    last = int(ramp[1])
    events: list[dict[str, Any]] = [{"rps": last, "timestamp": stamp(arrivals[0])}]
    for i, ns in enumerate(arrivals):
        now = int(shape.rate(i, rate))
        events += [{"rps": v, "timestamp": stamp(ns)} for v in range(last + 1, now + 1)]
        last = max(last, now)
    return events


def _count(value: Any) -> int | None:
    return None if value is None else round(value)


def spec_decode_fields(result: PointResultBase) -> dict[str, Any]:
    """vLLM's ``spec_decode_*`` keys of a speculative point; {} when the window had no draft
    tokens (vLLM writes none then) or the engine published no counters."""
    telemetry = result.telemetry
    window = telemetry.engine_metrics.get("spec_decode") if telemetry is not None else None
    if not isinstance(window, Mapping) or window.get("source") != "counters":
        return {}
    if not window.get("draft_tokens"):
        return {}
    rate = window.get("acceptance_rate")
    positions = window.get("acceptance_per_position")
    return {
        "spec_decode_acceptance_rate": None if rate is None else rate * 100.0,
        "spec_decode_acceptance_length": window.get("mean_acceptance_length"),
        "spec_decode_num_drafts": _count(window.get("drafts")),
        "spec_decode_draft_tokens": _count(window.get("draft_tokens")),
        "spec_decode_accepted_tokens": _count(window.get("accepted_tokens")),
        "spec_decode_per_position_acceptance_rates": list(positions or []),
    }


def _inferx_facts(
    result: PointResultBase, outputs: Sequence[VllmOutput], detailed: bool
) -> dict[str, Any]:
    notes = []
    why_workload = workload_keys(result)[1]
    if why_workload is not None:
        notes.append(why_workload)
    if detailed:
        notes.append("generated_texts: null: InferX does not keep the generated text")
    if any(o.client_queue_time is None for o in outputs):
        notes.append("queue_times: the records predate scheduled_ns; queueing unknown")
    slo = result.load.slo if result.load is not None else {}
    if "itl_ms" in slo:
        notes.append("request_goodput: vLLM has no ITL SLO; the itl_ms objective is not applied")
    if spec_decode_fields(result):
        notes.append(
            "spec_decode_*: InferX's counter window (edges interpolated between scrapes, counts "
            "rounded; a reset counted as Prometheus does; a figure out of bounds is null)"
        )
    facts: dict[str, Any] = {
        "point_id": result.point_id,
        "status": result.status,
        "inferx_version": result.provenance.inferx_version,
        "result_schema_version": result.schema_version,
        "notes": notes,
    }
    if result.reasoning is not None:  # vLLM has no reasoning keys: InferX's, flat names
        facts["reasoning"] = result.reasoning.flat()
    if result.anatomy is not None:  # the engine's own clock: vLLM's bench keeps none of it
        facts["anatomy"] = result.anatomy.model_dump(mode="json")
    return facts
