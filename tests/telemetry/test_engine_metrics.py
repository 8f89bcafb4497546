"""Engine /metrics: prometheus text parsed and mapped through the plugin's name map."""

from __future__ import annotations

from pathlib import Path

from inferx_core.sdk.probes import EngineMetricsMap
from inferx_core.telemetry.engine_metrics import FRONT_END_COUNT, FRONT_END_SUM, map_metrics

VLLM_TEXT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 16.0
vllm:num_requests_running{engine="1",model_name="tiny"} 4.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="tiny"} 16.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="tiny"} 0.5
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="tiny"} 3.0
vllm:num_preemptions_created{engine="0",model_name="tiny"} 1.7e9
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="tiny"} 5.0
vllm:time_to_first_token_seconds_count{model_name="tiny"} 5.0
vllm:time_to_first_token_seconds_sum{model_name="tiny"} 0.2
"""

VLLM_NAMES = EngineMetricsMap(
    kv_cache_usage="vllm:kv_cache_usage_perc",
    requests_running="vllm:num_requests_running",
    requests_waiting="vllm:num_requests_waiting",
    preemptions="vllm:num_preemptions",
)


def test_vllm_names_are_mapped_and_data_parallel_engines_combined() -> None:
    values = map_metrics(VLLM_TEXT, VLLM_NAMES)
    assert values == {
        "engine.kv_cache_usage": 0.5,  # the fuller engine
        "engine.requests_running": 20.0,  # summed over engines
        "engine.requests_waiting": 16.0,
        "engine.preemptions_total": 3.0,  # _created ignored
    }


def test_missing_family_is_none_and_scale_applies() -> None:
    names = EngineMetricsMap(
        kv_cache_usage="sglang:token_usage",
        kv_cache_usage_scale=0.01,
        requests_running="vllm:num_requests_running",
        extra={"ttft_count": "vllm:time_to_first_token_seconds_count"},
    )
    text = VLLM_TEXT + "# TYPE sglang:token_usage gauge\nsglang:token_usage 42.0\n"
    values = map_metrics(text, names)
    assert values["engine.kv_cache_usage"] == 0.42
    assert values["engine.ttft_count"] == 5.0
    assert map_metrics("", names)["engine.requests_running"] is None


# As llama-server's --metrics writes it (tools/server/server-task.cpp, to_metrics).
LLAMACPP_TEXT = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 300
# HELP llamacpp:prompt_tokens_cached_total Number of prompt tokens reused from the cache
# TYPE llamacpp:prompt_tokens_cached_total counter
llamacpp:prompt_tokens_cached_total 100
# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 3
"""


def test_engines_that_count_misses_get_queries_as_hits_plus_misses() -> None:
    names = EngineMetricsMap(
        requests_running="llamacpp:requests_processing",
        prefix_cache_hits="llamacpp:prompt_tokens_cached_total",
        prefix_cache_misses="llamacpp:prompt_tokens_total",
    )
    values = map_metrics(LLAMACPP_TEXT, names)
    assert values == {
        "engine.requests_running": 3.0,
        "engine.prefix_cache_hits_total": 100.0,
        "engine.prefix_cache_queries_total": 400.0,  # 300 computed + 100 from the cache
    }
    # a family missing from a scrape leaves the queries unknown, never half a sum
    without_misses = LLAMACPP_TEXT.replace("llamacpp:prompt_tokens_total 300\n", "")
    assert map_metrics(without_misses, names)["engine.prefix_cache_queries_total"] is None


def test_the_front_end_ttft_histogram_is_read_as_two_counters_from_a_real_vllm_scrape() -> None:
    """A scrape of the real vLLM CPU 0.32 after 3 warm-up and 16 measured requests
    (tests/telemetry/data/vllm_metrics_after.txt): _sum in seconds, _count one a request;
    an engine whose plugin declares no histogram gets no key (its split says why)."""
    text = (Path(__file__).parent / "data" / "vllm_metrics_after.txt").read_text()
    names = EngineMetricsMap(front_end_ttft_histogram="vllm:time_to_first_token_seconds")
    values = map_metrics(text, names)
    assert values[FRONT_END_COUNT] == 19.0
    total = values[FRONT_END_SUM]
    assert total is not None and 0.0 < total / 19 < 5.0  # a tiny model's TTFT: seconds at most
    assert FRONT_END_COUNT not in map_metrics(text, EngineMetricsMap())
    # a scrape without the family: None, never 0
    assert map_metrics(LLAMACPP_TEXT, names)[FRONT_END_SUM] is None
