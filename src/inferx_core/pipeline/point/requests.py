"""The requests of one load point: how many, their prompts, and the target they go to.

Prompts are built with exact token counts and a seed (``load/``); here they
become OpenAI-API payloads with a fresh record each, plus the warmup set. A chat
request's body carries the workload's reasoning knob (:func:`extra_body`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.config.reasoning import reasoning_body
from inferx_core.load.prompts.context_fit import (
    ContextLimit,
    fitting_indices,
    keep_prompts,
    nothing_fits,
)
from inferx_core.load.prompts.lengths import LengthSpec
from inferx_core.load.prompts.payloads import build_chat_payload, build_completions_payload
from inferx_core.load.prompts.prompt_set import PromptSet, WorkloadSpec, build_prompt_set
from inferx_core.load.prompts.session_trace import build_trace_sessions, read_session_trace
from inferx_core.load.prompts.trace_prompts import build_trace_prompt_set
from inferx_core.load.prompts.traces import (
    TraceError,
    TraceRequest,
    read_trace,
    select_requests,
    select_sessions,
    trace_rate,
)
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import PreparedRequest
from inferx_core.load.tokens.counter import CounterResolution
from inferx_core.load.tokens.tokenizer import LocalTokenizer
from inferx_core.sdk.server_timing_api import ServerTiming

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def extra_body(workload: Workload, own: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The fields every request body of ``workload`` adds: its reasoning knob
    (``chat_template_kwargs.enable_thinking``, ``reasoning_effort``), then ``own`` (a
    request's own extra body; its keys win). None when there are none."""
    body = {**reasoning_body(workload.reasoning, workload.api), **(own or {})}
    return body or None


def prompts_for(point: LoadPoint, load: LoadProfile) -> int:
    """Measured prompts: the configured number, else InferenceX's 10 x concurrency.

    Open loop without a number: ``prompts_per_concurrency`` seconds of arrivals
    at the rate (at least 20).
    """
    if load.num_prompts is not None:
        return load.num_prompts
    if load.stages:  # a pool the stages cycle: the busiest stage's default, as one level
        return max(
            prompts_for(_stage_point(s), load.model_copy(update={"stages": None}))
            for s in load.stages
        )
    if point.concurrency is not None:
        return load.prompts_per_concurrency * point.concurrency
    assert point.request_rate is not None
    return max(20, math.ceil(point.request_rate * load.prompts_per_concurrency))


def _stage_point(stage: Any) -> LoadPoint:
    return LoadPoint(concurrency=stage.concurrency, request_rate=stage.rate)


def warmup_for(point: LoadPoint, load: LoadProfile) -> int:
    """Warmup requests: configured, else one per concurrent slot (capped at 16 open loop)."""
    if load.warmup is not None:
        return load.warmup
    if load.stages:
        point = _stage_point(load.stages[0])
    if point.concurrency is not None:
        return point.concurrency
    return min(16, point.max_concurrency or math.ceil(point.request_rate or 1))


def workload_spec(workload: Workload) -> WorkloadSpec:
    mix = workload.lognormal
    return WorkloadSpec(
        kind=workload.kind,  # type: ignore[arg-type]  # traces and sessions: built elsewhere
        isl=workload.isl,
        osl=workload.osl,
        range_ratio=workload.range_ratio,
        semantics=workload.range_semantics,
        input_lognormal=LengthSpec(
            kind="lognormal",
            length=int(mix.input_median),
            sigma=mix.input_sigma,
            min_length=mix.input_min,
            max_length=mix.input_max,
        ),
        output_lognormal=LengthSpec(
            kind="lognormal",
            length=int(mix.output_median),
            sigma=mix.output_sigma,
            min_length=mix.output_min,
            max_length=mix.output_max,
        ),
        dataset_path=str(workload.dataset) if workload.dataset else None,
        api=workload.api,
        shared_prefix=workload.shared_prefix,
        dataset_columns=tuple(sorted(workload.dataset_columns.items())),
        dataset_max_line_bytes=workload.dataset_max_line_bytes,
        prefix_groups=workload.prefix_groups,
    )


@dataclass
class BenchTarget:
    """The server under test, as the load generator sees it."""

    base_url: str
    model: str
    headers: dict[str, str] = field(default_factory=dict)
    # Ask for per-chunk usage (``stream_options.continuous_usage_stats``): only
    # where the engine plugin says the server supports it (EngineInfo).
    continuous_usage: bool = False
    # Why per-chunk token counts will be unknown when not asked for.
    continuous_usage_note: str | None = None
    # The context length the server reports (/v1/models), for skipping over-long prompts.
    max_model_len: int | None = None
    # Where the engine's replies carry its own per-request clock (hook
    # inferx_engine_server_timing); None: the engine is not known or reports none.
    server_timing: ServerTiming | None = None


def discover_model(base_url: str, headers: dict[str, str] | None = None) -> str:
    """The first model the server lists at /v1/models (control plane: httpx)."""
    import httpx

    from inferx_core.errors import UserFacingError

    url = base_url.rstrip("/") + "/v1/models"
    try:
        reply = httpx.get(url, headers=headers, timeout=10.0)
        reply.raise_for_status()
        models = [m["id"] for m in reply.json().get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        fix = (
            "the server needs an API key: set api_key / INFERX_API_KEY"
            if status in (401, 403)
            else "pass --model NAME"
        )
        raise UserFacingError(f"cannot list models at {url}: {exc}; {fix}") from exc
    if not models:
        raise UserFacingError(f"{url} lists no model; pass --model NAME")
    return models[0]


def _prepare(
    prompts: PromptSet,
    target: BenchTarget,
    workload: Workload,
    *,
    warmup: bool,
    first_id: int,
) -> list[PreparedRequest]:
    path = API_PATHS[workload.api]
    extra = extra_body(workload)
    requests = []
    for i, prompt in enumerate(prompts):
        if workload.api == "chat":
            payload = build_chat_payload(
                target.model,
                prompt.prompt,
                prompt.max_tokens,
                ignore_eos=workload.ignore_eos,
                continuous_usage=target.continuous_usage,
                extra_body=extra,
            )
        else:
            payload = build_completions_payload(
                target.model,
                prompt.prompt,  # type: ignore[arg-type]  # completions: text prompts
                prompt.max_tokens,
                ignore_eos=workload.ignore_eos,
                continuous_usage=target.continuous_usage,
            )
        record = RequestRecord(
            request_id=first_id + i,
            prompt_tokens=prompt.prompt_tokens,
            max_tokens=prompt.max_tokens,
            warmup=warmup,
        )
        requests.append(PreparedRequest(path, payload, record))
    return requests


def _cycle(requests: list[PreparedRequest], first_id: int) -> Iterator[PreparedRequest]:
    """Endless requests for duration-bound runs: the prompt pool, reused with fresh records."""
    for n, prepared in enumerate(itertools.cycle(requests)):
        record = replace(prepared.record, request_id=first_id + n, chunk_ns=[])
        yield PreparedRequest(prepared.path, prepared.payload, record)


@dataclass
class Requests:
    """The prepared requests of one point and the workload they came from."""

    built: PromptSet
    measured: Any  # a list, or an endless iterator for duration-bound runs
    warmup: list[PreparedRequest]
    n_measured: int
    # Over-long prompts skipped (the result's workload.context), when a limit is known.
    context: dict[str, Any] | None = None
    # A trace replay: its requests per second ((n - 1) over the arrivals' span).
    trace_rate: float | None = None


def build_requests(
    target: BenchTarget,
    point: LoadPoint,
    workload: Workload,
    load: LoadProfile,
    counter: CounterResolution,
) -> Requests:
    if workload.kind == "trace" and workload.trace_format == "inferx":
        return _session_trace_build(target, point, workload, load, counter)
    if workload.kind == "trace":
        return _trace_build(target, workload, load, counter)
    n_measured = prompts_for(point, load)
    n_warmup = warmup_for(point, load)
    spec = workload_spec(workload)
    # shared prefixes are token ids decoded: a local tokenizer when the server cannot decode
    builder, note = _decoding_counter(counter, workload) if workload.shared_prefix else (None, None)
    builder = builder or counter.counter
    built = build_prompt_set(spec, builder, n_measured, workload.seed)
    built.notes.extend([note] if note else [])
    context = None
    limit = context_limit(workload, target, counter)
    if workload.kind == "dataset" and limit is not None:
        built, context = _fit_dataset(built, spec, counter, n_measured, workload.seed, limit)
    warm_built = (
        build_prompt_set(spec, builder, n_warmup, workload.seed + 7919) if n_warmup else None
    )
    if warm_built is not None and limit is not None and workload.kind == "dataset":
        warm_built = keep_prompts(warm_built, fitting_indices(warm_built.prompts, limit))
    measured = _prepare(built, target, workload, warmup=False, first_id=0)
    n_warm = len(warm_built) if warm_built else 0
    warmup = (
        _prepare(warm_built, target, workload, warmup=True, first_id=-n_warm)
        if warm_built and n_warm
        else []
    )
    endless = (load.duration_s or load.stages) and load.num_prompts is None
    measured_requests = _cycle(measured, 0) if endless else measured
    return Requests(built, measured_requests, warmup, len(measured), context=context)


def context_limit(
    workload: Workload, target: BenchTarget, counter: CounterResolution
) -> ContextLimit | None:
    """The context prompts must fit: the workload's max_model_len, else what the server
    reports (/v1/models, or its /tokenize replies), else None (unknown: nothing skipped)."""
    if workload.max_model_len is not None:
        return ContextLimit(workload.max_model_len, "workload.max_model_len")
    if target.max_model_len is not None:
        return ContextLimit(target.max_model_len, f"{target.base_url}/v1/models")
    reported = getattr(counter.counter, "max_model_len", None)
    if isinstance(reported, int) and reported > 0:
        return ContextLimit(reported, f"{target.base_url}/tokenize")
    return None


def _fit_dataset(
    built: PromptSet,
    spec: WorkloadSpec,
    counter: CounterResolution,
    n: int,
    seed: int,
    limit: ContextLimit,
) -> tuple[PromptSet, dict[str, Any]]:
    """The first ``n`` dataset prompts that fit the context, as vLLM samples past over-long
    records: when some are over, the workload is built again longer and the rest fill in."""
    keep = fitting_indices(built.prompts, limit)
    if not keep:
        raise nothing_fits(f"dataset {spec.dataset_path}", len(built), limit)
    considered = len(built)
    records = int(built.input_lengths.get("records") or n)
    if len(keep) < n:
        # prompt i depends only on (seed, i): the longer build starts with the same prompts
        longer = min(math.ceil(n * n / len(keep) * 1.25) + 8, max(records, n) + n)
        built = build_prompt_set(spec, counter.counter, longer, seed)
        keep = fitting_indices(built.prompts, limit)
        considered = keep[n - 1] + 1 if len(keep) >= n else len(built)
        keep = keep[:n]
    skipped = considered - len(keep)
    kept = keep_prompts(built, keep)
    # the builder's overflow and repeat notes counted the prompts it built, not those kept
    kept.notes = [
        n
        for n in kept.notes
        if "exceed the server's max_model_len" not in n and not n.startswith("dataset has ")
    ]
    if keep and keep[-1] >= records:
        kept.notes.append(
            f"dataset has {records} records for {len(keep)} prompts over "
            f"{considered} tried: records repeat (repeated prompts can hit the "
            "prefix cache)"
        )
    if skipped:
        kept.notes.append(
            f"dataset: skipped {skipped} of {considered} prompts over the context "
            f"(prompt tokens + max_tokens > max_model_len {limit.max_model_len}, "
            f"{limit.source})"
        )
    if len(kept) < n:
        kept.notes.append(f"{len(kept)} prompts fit the context of the {n} asked for")
    return kept, limit.describe(skipped, considered)


def _trace_selection(workload: Workload, load: LoadProfile) -> tuple[list[TraceRequest], int]:
    """The replayed requests (window, speedup, num_prompts cap) and the file's total."""
    assert workload.trace is not None and workload.trace_format is not None
    every = read_trace(workload.trace, workload.trace_format)
    chosen = select_requests(
        every,
        speedup=workload.trace_speedup,
        window=workload.trace_window,
        limit=load.num_prompts,
    )
    if not chosen:
        start, end = workload.trace_window or (0.0, None)
        raise TraceError(
            f"{workload.trace}: no request in the window [{start:g}, "
            f"{'end' if end is None else f'{end:g}'}) s of its {len(every)} requests"
        )
    return chosen, len(every)


def _trace_build(
    target: BenchTarget, workload: Workload, load: LoadProfile, counter: CounterResolution
) -> Requests:
    """A trace replay: prompts of its lengths and prefixes, each sent at its arrival."""
    chosen, total = _trace_selection(workload, load)
    tok, tok_note = _decoding_counter(counter, workload)
    describe = {
        "kind": "trace",
        "trace": str(workload.trace),
        "trace_format": workload.trace_format,
        "trace_speedup": workload.trace_speedup,
        "trace_window": workload.trace_window,
        "requests_in_file": total,
        "requests_selected": len(chosen),
    }
    built = build_trace_prompt_set(
        chosen, tok, seed=workload.seed, api=workload.api, describe=describe
    )
    if tok_note:
        built.notes.append(tok_note)
    context = None
    limit = context_limit(workload, target, counter)
    if limit is not None:
        keep = fitting_indices(built.prompts, limit)
        if not keep:
            raise nothing_fits(f"trace {workload.trace}", len(chosen), limit)
        context = limit.describe(len(chosen) - len(keep), len(chosen))
        if len(keep) < len(chosen):
            built = keep_prompts(built, keep)
            built.notes.append(
                f"trace: skipped {len(chosen) - len(keep)} requests over the context "
                f"(max_model_len {limit.max_model_len}, {limit.source})"
            )
        chosen = [chosen[i] for i in keep]
    measured = _prepare(built, target, workload, warmup=False, first_id=0)
    for prepared, request in zip(measured, chosen, strict=True):
        prepared.at_s = request.at_s
    n_warm = min(load.warmup or 0, len(chosen))
    warmup: list[PreparedRequest] = []
    if n_warm:
        # the first requests' lengths, other blocks (seed): the trace's prefixes stay cold
        warm = build_trace_prompt_set(
            chosen[:n_warm], tok, seed=workload.seed + 7919, api=workload.api
        )
        warmup = _prepare(warm, target, workload, warmup=True, first_id=-n_warm)
    return Requests(
        built, measured, warmup, len(measured), context=context, trace_rate=trace_rate(chosen)
    )


def _session_trace_build(
    target: BenchTarget,
    point: LoadPoint,
    workload: Workload,
    load: LoadProfile,
    counter: CounterResolution,
) -> Requests:
    """An InferX session trace. Timed: sessions start at their (windowed, sped-up) times
    and each turn follows its timestamp or think time. Untimed: the point's closed or
    open loop dispatches the sessions (think times divided by the speedup)."""
    assert workload.trace is not None
    specs = read_session_trace(workload.trace)
    if point.trace and specs[0].start_s is None:
        raise TraceError(
            f"{workload.trace}: no session has turns[0].timestamp_s, so there are no times to "
            "replay; time the sessions' starts, or give load.concurrency or load.request_rate"
        )
    chosen = select_sessions(
        specs,
        speedup=workload.trace_speedup,
        window=workload.trace_window,
        limit=load.num_prompts,
        untimed=not point.trace,
    )
    if not chosen:
        window = workload.trace_window
        raise TraceError(f"{workload.trace}: no session starts in the window {window}")
    sessions, built = build_trace_sessions(
        chosen,
        counter.counter,
        workload.seed,
        api=workload.api,
        model=target.model,
        ignore_eos=workload.ignore_eos,
        continuous_usage=target.continuous_usage,
    )
    for session in sessions:
        session.extra_body = extra_body(workload, session.extra_body)
    built.notes.append(
        f"inferx session trace {workload.trace}: {len(chosen)} of {len(specs)} sessions, "
        f"speedup x{workload.trace_speedup:g}, window {workload.trace_window or 'all'}"
    )
    n_requests = sum(s.n_requests for s in sessions)
    return Requests(built, sessions, [], n_requests)


def _decoding_counter(counter: CounterResolution, workload: Workload) -> tuple[Any, str | None]:
    """The counter prompts are built with: the resolved one, or the local tokenizer file
    when the server's /tokenize cannot detokenize (hash_ids and shared prefixes need token
    ids decoded)."""
    current = counter.counter
    if getattr(current, "can_decode", True) or workload.tokenizer is None:
        return current, None
    local = LocalTokenizer.from_file(workload.tokenizer)
    why = getattr(current, "decode_unavailable_reason", None) or "no detokenize"
    return local, (
        f"the server's tokenizer cannot decode ({why}): prompts are built and counted "
        f"with the local tokenizer {workload.tokenizer}"
    )


def continuous_usage_for(engine: Any) -> tuple[bool, str | None]:
    """(ask for per-chunk usage?, why not) for an engine's EngineInfo, or None when unknown."""
    if engine is None:
        return False, (
            "per-chunk usage not requested: the engine behind the server is not named "
            "(--engine NAME lets its plugin say whether it supports continuous_usage_stats)"
        )
    if getattr(engine, "continuous_usage_stats", False):
        return True, None
    return False, (
        f"per-chunk usage not requested: the {engine.name} plugin does not declare "
        "stream_options.continuous_usage_stats support"
    )
