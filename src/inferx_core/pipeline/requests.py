"""The requests of one load point: how many, their prompts, and the target they go to.

Prompts are built with exact token counts and a seed (``load/``); here they
become OpenAI-API payloads with a fresh record each, plus the warmup set.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint
from inferx_core.load.client import build_chat_payload, build_completions_payload
from inferx_core.load.lengths import LengthSpec
from inferx_core.load.records import RequestRecord
from inferx_core.load.scheduler import PreparedRequest
from inferx_core.load.token_counter import CounterResolution
from inferx_core.load.workload import Workload as BuiltWorkload
from inferx_core.load.workload import WorkloadSpec, build_workload

API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def prompts_for(point: LoadPoint, load: LoadProfile) -> int:
    """Measured prompts: the configured number, else InferenceX's 10 x concurrency.

    Open loop without a number: ``prompts_per_concurrency`` seconds of arrivals
    at the rate (at least 20).
    """
    if load.num_prompts is not None:
        return load.num_prompts
    if point.concurrency is not None:
        return load.prompts_per_concurrency * point.concurrency
    assert point.request_rate is not None
    return max(20, math.ceil(point.request_rate * load.prompts_per_concurrency))


def warmup_for(point: LoadPoint, load: LoadProfile) -> int:
    """Warmup requests: configured, else one per concurrent slot (capped at 16 open loop)."""
    if load.warmup is not None:
        return load.warmup
    if point.concurrency is not None:
        return point.concurrency
    return min(16, point.max_concurrency or math.ceil(point.request_rate or 1))


def workload_spec(workload: Workload) -> WorkloadSpec:
    mix = workload.lognormal
    return WorkloadSpec(
        kind=workload.kind,
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
    prompts: BuiltWorkload,
    target: BenchTarget,
    workload: Workload,
    *,
    warmup: bool,
    first_id: int,
) -> list[PreparedRequest]:
    path = API_PATHS[workload.api]
    requests = []
    for i, prompt in enumerate(prompts):
        if workload.api == "chat":
            payload = build_chat_payload(
                target.model, prompt.prompt, prompt.max_tokens, ignore_eos=workload.ignore_eos,
                continuous_usage=target.continuous_usage,
            )  # fmt: skip
        else:
            payload = build_completions_payload(
                target.model, prompt.prompt, prompt.max_tokens, ignore_eos=workload.ignore_eos,
                continuous_usage=target.continuous_usage,
            )  # fmt: skip
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

    built: BuiltWorkload
    measured: Any  # a list, or an endless iterator for duration-bound runs
    warmup: list[PreparedRequest]
    n_measured: int


def build_requests(
    target: BenchTarget,
    point: LoadPoint,
    workload: Workload,
    load: LoadProfile,
    counter: CounterResolution,
) -> Requests:
    n_measured = prompts_for(point, load)
    n_warmup = warmup_for(point, load)
    spec = workload_spec(workload)
    built = build_workload(spec, counter.counter, n_measured, workload.seed)
    warm_built = (
        build_workload(spec, counter.counter, n_warmup, workload.seed + 7919) if n_warmup else None
    )
    measured = _prepare(built, target, workload, warmup=False, first_id=0)
    warmup = (
        _prepare(warm_built, target, workload, warmup=True, first_id=-n_warmup)
        if warm_built
        else []
    )
    endless = load.duration_s and load.num_prompts is None
    return Requests(built, _cycle(measured, 0) if endless else measured, warmup, n_measured)


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
