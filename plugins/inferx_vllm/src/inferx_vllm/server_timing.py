"""vLLM's own per-request clock: the flags that switch it on and where the reply carries it.

vLLM 0.32 with ``--enable-per-request-metrics`` puts a ``metrics`` object on a
stream's final usage chunk (vllm/entrypoints/generate/base/protocol.py:
``PerRequestMetrics``): ``queue_time_ms`` (queued -> scheduled),
``time_to_first_token_ms`` (scheduled -> first token), ``generation_time_ms``
(first -> last token), ``mean_itl_ms``, ``tokens_per_second`` and, with
speculative decoding, ``speculative_decoding`` (``SpeculativeDecodingMetrics``:
``num_spec_steps``, ``num_draft_tokens``, ``num_accepted_draft_tokens``, the
acceptance histogram). vLLM refuses the flag together with
``--disable-log-stats`` (cli_args.py: it needs the engine's statistics).
``--enable-request-id-headers`` echoes the ``X-Request-Id`` InferX sends
(vLLM takes the header as its own request id either way). The per-request
speculative counts need ``--per-request-spec-decode-metrics summary`` too
(config/observability.py; refused without ``--speculative-config``,
independent of ``--disable-log-stats``), given when the server speculates.
"""

from __future__ import annotations

from inferx_core import ServerConfig, ServerTiming

__all__ = ["FLAGS", "SERVER_TIMING", "server_timing", "server_timing_argv"]

PER_REQUEST_METRICS = "--enable-per-request-metrics"
REQUEST_ID_HEADERS = "--enable-request-id-headers"
FLAGS = (PER_REQUEST_METRICS, REQUEST_ID_HEADERS)
DISABLE_LOG_STATS = "--disable-log-stats"
SPEC_METRICS = "--per-request-spec-decode-metrics"

SERVER_TIMING = ServerTiming(
    name="vllm",
    reply_fields=("metrics", "usage"),
    launch_args=FLAGS,
    queue_ms="metrics.queue_time_ms",
    ttft_ms="metrics.time_to_first_token_ms",
    decode_ms="metrics.generation_time_ms",
    spec_drafts="metrics.speculative_decoding.num_spec_steps",
    spec_draft_tokens="metrics.speculative_decoding.num_draft_tokens",
    spec_accepted_tokens="metrics.speculative_decoding.num_accepted_draft_tokens",
    # Only with --enable-prompt-tokens-details (else null, with the reason).
    cached_tokens="usage.prompt_tokens_details.cached_tokens",
    # vLLM 0.32 clocks a request from the engine core's QUEUED event to its first-token
    # step (engine-core monotonic stamps); its API server is outside that clock.
    unclocked=(
        "vLLM's API server, not clocked per request by vLLM: HTTP parsing, chat template "
        "and tokenization, the hand-off to the engine core and back (ZMQ), detokenizing "
        "and writing the first chunk"
    ),
)


def _key(flag: str) -> str:
    return flag.removeprefix("--").replace("_", "-")


def _given(server: ServerConfig) -> dict[str, object]:
    """The user's own settings of the flags: engine_args keys and extra_argv tokens."""
    given: dict[str, object] = {_key(k): v for k, v in server.engine_args.items()}
    for token in server.extra_argv:
        if token.startswith("--no-"):
            given[token[5:]] = False
        elif token.startswith("--"):
            given[_key(token.split("=", 1)[0])] = True
    return given


def _log_stats_off(given: dict[str, object]) -> bool:
    return bool(given.get(_key(DISABLE_LOG_STATS)))


def server_timing_argv(server: ServerConfig) -> list[str]:
    """The flags a launched server gets by default: each one the user did not set
    (on or off) already, and none with ``--disable-log-stats`` (vLLM refuses both)."""
    given = _given(server)
    spec = (
        [SPEC_METRICS, "summary"] if server.speculative and _key(SPEC_METRICS) not in given else []
    )
    if _log_stats_off(given):
        return spec
    return [flag for flag in FLAGS if _key(flag) not in given] + spec


def server_timing(server: ServerConfig) -> ServerTiming | None:
    """The description, or None when the user switched the per-request metrics off."""
    given = _given(server)
    if _log_stats_off(given) or given.get(_key(PER_REQUEST_METRICS), True) is False:
        return None
    return SERVER_TIMING
