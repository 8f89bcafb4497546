"""Why a number looks wrong: a point's verdict as a ranked diagnosis in plain words.

Each :class:`Rule` names a symptom, the checks of the verdict that reveal it,
and how each tool (and InferX) avoids it. :func:`diagnose` ranks what fired:
the measurement first (a starved client makes every other figure
meaningless), then the workload (the run measured something else than was
asked), then the server's behaviour (errors, saturation: a rate missed while the
client sent on time; a client that sent late is a wrong measurement, late_dispatch).
docs/why-numbers.md is generated from :data:`RULES` (:func:`symptom_page`), so the
page and the checks cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from inferx_core.metrics.validity import Validity, ValidityCheck
from inferx_core.results.model import PointResultBase

__all__ = ["CATEGORIES", "RULES", "Finding", "Rule", "diagnose", "symptom_page"]

Category = Literal["measurement", "workload", "server"]

#: Ranked: a wrong measurement first, then a workload not as asked, then the server.
CATEGORIES: dict[Category, str] = {
    "measurement": "the measurement is wrong",
    "workload": "the workload is not what was asked",
    "server": "the server's behaviour",
}


@dataclass(frozen=True)
class Rule:
    key: str
    category: Category
    symptom: str  # what the user sees
    cause: str  # what it means, in plain words
    checks: tuple[str, ...]  # the verdict's checks that reveal it (a prefix ends in '.')
    fixes: Mapping[str, str]  # tool (or "InferX") -> the flag or setting that avoids it
    # a trigger beyond the checks: (result) -> evidence or None
    extra: Callable[[PointResultBase], str | None] | None = field(default=None, compare=False)
    # checks whose failure blames another rule: this one then does not fire
    unless: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    rank: int
    category: Category
    rule: str
    symptom: str
    cause: str
    evidence: list[str]
    fix: str

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "category": self.category,
            "rule": self.rule,
            "symptom": self.symptom,
            "cause": self.cause,
            "evidence": self.evidence,
            "fix": self.fix,
        }


def _itl_median_zero(result: PointResultBase) -> str | None:
    lat = result.latency
    median = lat.itl_ms.median if lat is not None else None
    if median == 0:
        return "the median inter-token latency is 0 ms: most tokens arrived in the same read"
    return None


def _truncated(result: PointResultBase) -> str | None:
    kinds = result.load.failed_by_kind if result.load is not None else {}
    n = kinds.get("truncated", 0)
    return f"{n} replies ended with neither [DONE] nor a finish_reason" if n else None


RULES: tuple[Rule, ...] = (
    Rule(
        "starved_client",
        "measurement",
        "ITL median of 0; TTFT close to the whole latency; less throughput and a longer TTFT "
        "than the same server gives other clients",
        "the client could not read the stream as it came: whole replies arrived in one read, "
        "so TTFT, ITL and the throughput describe the client's CPU, not the server",
        (
            "whole_reply_at_once",
            "chunk_coalescing",
            "receive_lag",
            "client_cpu",
            "client_dispatch_delay",
            "client_",
        ),
        {
            "AIPerf": "fewer requests per worker process (--workers-max above the concurrency's "
            "need), or a lower --concurrency; keep the client off the server's cores (taskset)",
            "GuideLLM": "fewer streams (--profile kind=concurrent,streams=N) or more worker "
            "processes (GUIDELLM__MAX_WORKER_PROCESSES); keep the client off the server's cores "
            "(taskset)",
            "vllm bench serve": "a lower --max-concurrency, or the client on other cores "
            "(taskset); it has one event loop",
            "inference-perf": "more load workers (load.num_workers) or a lower rate",
            "InferX": "--workers N (load worker processes) and client_cpus/engine_cpus apart; "
            "the client checks (client_cpu, client_loop_lag) say when it is the bottleneck",
        },
        _itl_median_zero,
    ),
    Rule(
        "late_dispatch",
        "measurement",
        "requests sent later than scheduled; an achieved rate below the target",
        "the client sent requests later than its own schedule asked: its loop or workers fell "
        "behind (or, under a concurrency cap, waited for a free slot), so the load measured is "
        "lighter and burstier than the one the point names, whatever the server could do",
        ("dispatch_lateness",),
        {
            "GuideLLM": "more worker processes (GUIDELLM__MAX_WORKER_PROCESSES), the client on "
            "cores of its own (taskset), or a lower rate",
            "InferX": "--workers N (load worker processes), client_cpus apart from engine_cpus, "
            "a --max-concurrency above rate x latency; dispatch_lateness judges every point",
        },
    ),
    Rule(
        "early_first_chunk",
        "measurement",
        "a TTFT of a few ms from a server that takes far longer; a TPOT above the ITL",
        "the client took TTFT at a chunk that carried no token (a chat stream's role-only "
        "first chunk): TTFT is too early and TPOT is stretched by the real first-token wait",
        ("first_chunk_without_token",),
        {
            "vllm bench serve": "--backend openai --endpoint /v1/completions (no role chunk), "
            "or a server whose first chunk carries the first token",
            "InferX": "TTFT is the first chunk with generated content (role-only and "
            "usage-only chunks are not stamped)",
        },
    ),
    Rule(
        "incomplete_file",
        "measurement",
        "the per-request file and the summary disagree on how many requests ran",
        "rows were removed from (or added to) the per-request data after the run: what is "
        "left cannot confirm the summary's figures",
        ("records_complete",),
        {"*": "re-run, or publish the files exactly as the tool wrote them"},
    ),
    Rule(
        "tool_warned",
        "measurement",
        "headline figures from a run the tool itself warned about",
        "the tool flagged its own run (requests dispatched late, its data generation the "
        "bottleneck) in its file, beside figures that do not say so",
        ("guidellm_warning.",),
        {
            "GuideLLM": "fewer streams or requests per worker (GUIDELLM__MAX_WORKER_PROCESSES), "
            "the client on cores of its own; its warning's note names the cause",
            "InferX": "the client checks (client_cpu, client_loop_lag, dispatch_lateness) judge "
            "the same in every point",
        },
    ),
    Rule(
        "thin_percentiles",
        "measurement",
        "a p99 equal to the maximum; tails that jump between runs",
        "too few samples stand behind a high percentile: with fewer than 100/(100-p) samples "
        "it is the sample's maximum, not a tail",
        ("sample_size.",),
        {
            "AIPerf": "more requests: --request-count (or --benchmark-duration)",
            "GuideLLM": "more requests: --constraint kind=max_requests,count=N (or "
            "kind=max_duration,seconds=S)",
            "vllm bench serve": "more requests: --num-prompts",
            "inference-perf": "a longer load stage (load.stages[].duration)",
            "InferX": "more requests: --num-prompts (the verdict marks such percentiles)",
        },
    ),
    Rule(
        "wrong_output_length",
        "workload",
        "replies much shorter (or longer) than the output length the run names; throughput "
        "per request that looks too good",
        "the run measured another workload than the one it names: the model stopped at EOS, "
        "or the requested length never reached the server",
        ("output_length",),
        {
            "AIPerf": "--output-tokens-mean N with --extra-inputs ignore_eos:true "
            "--extra-inputs min_tokens:N",
            "GuideLLM": "--data kind=synthetic_text,prompt_tokens=..,output_tokens=N (it then "
            "sends max_tokens with ignore_eos; the server must honour ignore_eos)",
            "vllm bench serve": "--ignore-eos with --random-output-len N",
            "inference-perf": "data.type: random/synthetic with output_distribution and ignore_eos",
            "InferX": "workload ignore_eos: true (the default for random prompts)",
        },
    ),
    Rule(
        "usage_disagrees",
        "workload",
        "token counts or token throughput that the stream itself contradicts",
        "the token counts (the server's usage, or the tool's tokenizer) disagree with what "
        "was streamed: fewer tokens than content chunks, or more than max_tokens",
        ("usage_cross_check", "tool_token_count"),
        {
            "AIPerf": "--use-server-token-count (and a server that reports usage)",
            "GuideLLM": "a server that returns usage (GuideLLM asks with "
            "stream_options.include_usage)",
            "vllm bench serve": "a server that reports usage (it counts the stream otherwise)",
            "inference-perf": "report.request_lifecycle.use_server_output_tokens: true (its "
            "figures then count the server's usage), or a tokenizer matching the served model "
            "(tokenizer.pretrained_model_name_or_path)",
            "InferX": "usage is read from the stream and cross-checked for every request",
        },
    ),
    Rule(
        "truncated_replies",
        "workload",
        "replies that end without a finish_reason; shorter outputs than asked",
        "the stream was cut (a proxy, a timeout, a crash): the reply is not what was asked",
        (),
        {
            "*": "a longer client timeout, no buffering proxy between client and server",
            "InferX": "such replies are failed requests of kind 'truncated'",
        },
        _truncated,
    ),
    Rule(
        "unreached_concurrency",
        "workload",
        "a concurrency level whose figures look like a lighter load",
        "the named concurrency was never reached: too few requests, or the client could not "
        "open that many streams",
        ("concurrency_reached",),
        {
            "AIPerf": "--request-count at least a few times --concurrency, and --warmup-request-"
            "count",
            "GuideLLM": "--constraint kind=max_requests,count=N well above the streams of "
            "--profile kind=concurrent,streams=S",
            "vllm bench serve": "--num-prompts several times --max-concurrency",
            "inference-perf": "more load workers, a longer stage",
            "InferX": "the closed loop keeps N in flight; the point's max_concurrent_requests "
            "shows it",
        },
    ),
    Rule(
        "errors",
        "server",
        "failed requests counted apart, or figures from the few that succeeded",
        "the server refused, timed out or broke streams: the figures describe the requests "
        "that survived",
        ("error_rate",),
        {"*": "a lower load, a larger timeout; the error kinds say which"},
    ),
    Rule(
        "saturation",
        "server",
        "achieved request rate below the target while the client sent on time",
        "fewer requests went out than the rate asked for, and no check shows the client "
        "sending late: the server's latency kept the requests in flight at the concurrency "
        "cap (or its queue refused more), so the point is a lower rate than it names",
        ("achieved_rate", "rate_reached"),
        {
            "AIPerf": "a --concurrency above rate x latency (it caps the requests in flight), "
            "or a lower --request-rate",
            "GuideLLM": "a lower rate (--profile kind=constant,rate=R or kind=poisson,rate=R)",
            "vllm bench serve": "a lower --request-rate, --max-concurrency above rate x latency",
            "inference-perf": "a lower rate, more load workers",
            "InferX": "a lower --request-rate, --max-concurrency above rate x latency; the "
            "achieved_rate check holds each point to its schedule",
        },
        # a late client explains a missed rate itself: late_dispatch (measurement) says so
        unless=("dispatch_lateness", "client_dispatch_delay"),
    ),
)


def _fires(rule: Rule, check: ValidityCheck) -> bool:
    return not check.passed and any(
        check.name == name or (name.endswith(("_", ".")) and check.name.startswith(name))
        for name in rule.checks
    )


def _fix(rule: Rule, tool: str) -> str:
    own = rule.fixes.get(tool) or rule.fixes.get("*")
    inferx = rule.fixes.get("InferX")
    parts = [f"{tool}: {own}" if own else None, f"InferX: {inferx}" if inferx else None]
    return "; ".join(p for p in parts if p)


def diagnose(result: PointResultBase, validity: Validity | None, tool: str) -> list[Finding]:
    """What fired, ranked: what invalidates before what only marks, then measurement,
    workload, server."""
    checks = validity.checks if validity is not None else []
    fired = []
    failed = {c.name for c in checks if not c.passed}
    for order, rule in enumerate(RULES):
        if failed & set(rule.unless):
            continue
        hits = [c for c in checks if _fires(rule, c)]
        evidence = [f"{c.name}: {c.why}" for c in hits]
        more = rule.extra(result) if rule.extra is not None else None
        if more:
            evidence.append(more)
        if evidence:
            marks_only = all(c.severity == "marks" for c in hits) and more is None
            key = (marks_only, list(CATEGORIES).index(rule.category), order)
            fired.append((key, rule, evidence))
    fired.sort(key=lambda item: item[0])
    return [
        Finding(i + 1, rule.category, rule.key, rule.symptom, rule.cause, ev, _fix(rule, tool))
        for i, (_, rule, ev) in enumerate(fired)
    ]


def symptom_page() -> str:
    """The generated part of docs/why-numbers.md: every symptom, its checks and fixes."""
    lines = []
    for category, title in CATEGORIES.items():
        lines += [f"## {title[0].upper()}{title[1:]}", ""]
        for rule in (r for r in RULES if r.category == category):
            checks = ", ".join(f"`{c}`" for c in rule.checks) or "none: the failed requests' kinds"
            lines += [f"### {rule.symptom[0].upper()}{rule.symptom[1:]}", ""]
            lines += [f"{rule.cause[0].upper()}{rule.cause[1:]}.", ""]
            lines += [f"Diagnosis `{rule.key}`, from the checks {checks}.", ""]
            if rule.unless:
                blamed = " or ".join(f"`{c}`" for c in rule.unless)
                lines += [
                    f"Not when {blamed} failed: the client sent late, a wrong measurement.",
                    "",
                ]
            lines += ["| tool | what avoids it |", "| --- | --- |"]
            lines += [f"| {tool} | {fix} |" for tool, fix in rule.fixes.items()]
            lines.append("")
    return "\n".join(lines).replace("| * |", "| any tool |")
