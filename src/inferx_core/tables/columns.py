"""The columns of a point's row, declared once, in the order the report's CSV writes them.

``analysis.points.build_rows`` (above) makes the rows; ``points.csv``
(``tables.points.CSV_COLUMNS``) writes every column here, in this order; the
accuracy columns (``report.accuracy.POINT_FIELDS``) are added by the report.
Each column says where its value comes from:

- ``point``: what the result is (``analysis.points.describe_point``);
- ``row``: made by ``build_rows`` itself (validity, hardware, group, file path);
- ``cost``: cost and power figures (``analysis.cost.cost_fields``);
- ``repeats``: the spread over a point's repeats (``analysis.points.repeat_columns``);
- ``metric``: the result's own figure under its flat (vLLM) name (``result.flat()``);
- ``accuracy``: the accuracy measured on the point's server (``report.accuracy``);
- ``pareto``: the frontier flags (``analysis.points.mark_pareto``);
- ``layers``: the layer of the TTFT that moved from the series' previous load point
  (``analysis.layers.layer_steps``, from the results' anatomies).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ACCURACY_FIELDS", "METRIC_FIELDS", "ROW_COLUMNS", "column_names"]

Source = Literal["point", "row", "cost", "repeats", "metric", "accuracy", "pareto", "layers"]

#: (column, where its value comes from), in CSV order.
ROW_COLUMNS: tuple[tuple[str, Source], ...] = (
    ("point_id", "point"),
    ("status", "point"),
    ("valid", "row"),
    ("validity_failing", "row"),
    ("group", "row"),
    ("series", "point"),
    ("hardware", "row"),
    ("gpu_type", "cost"),
    ("gpu_type_source", "cost"),
    ("num_gpus", "cost"),
    ("num_gpus_source", "cost"),
    ("engine", "point"),
    ("engine_version", "point"),
    ("model", "point"),
    ("precision", "point"),
    ("tp", "point"),
    ("pp", "point"),
    ("dp", "point"),
    ("ep", "point"),
    ("scenario", "point"),
    ("isl", "point"),
    ("osl", "point"),
    ("api", "point"),
    ("mode", "point"),
    ("concurrency", "point"),
    ("request_rate", "point"),
    ("concurrency_cap", "point"),
    ("completed", "metric"),
    ("failed", "metric"),
    ("duration", "metric"),
    ("request_throughput", "metric"),
    ("output_throughput", "metric"),
    ("repeats", "repeats"),
    ("output_throughput_min", "repeats"),
    ("output_throughput_max", "repeats"),
    ("output_throughput_ci95_low", "repeats"),
    ("output_throughput_ci95_high", "repeats"),
    ("total_token_throughput", "metric"),
    ("tput_per_gpu", "cost"),
    ("output_tput_per_gpu", "cost"),
    ("input_tput_per_gpu", "cost"),
    ("median_intvty", "metric"),
    ("mean_ttft_ms", "metric"),
    ("median_ttft_ms", "metric"),
    ("p99_ttft_ms", "metric"),
    ("median_tpot_ms", "metric"),
    ("p99_tpot_ms", "metric"),
    ("median_itl_ms", "metric"),
    ("p99_itl_ms", "metric"),
    ("median_e2el_ms", "metric"),
    ("p99_e2el_ms", "metric"),
    ("request_goodput", "metric"),
    # reasoning models (empty otherwise): the answer's own clock and the thinking's tokens
    ("median_ttfo_ms", "metric"),
    ("p99_ttfo_ms", "metric"),
    ("median_tpot_answer_ms", "metric"),
    ("total_reasoning_tokens", "metric"),
    # speculative decoding (empty otherwise): acceptance over the measured window
    ("spec_acceptance_rate", "metric"),
    ("spec_mean_acceptance_length", "metric"),
    # the engine's own clock (empty without it): which layer of the TTFT moved from the
    # previous load point of the series (queue, prefill or client) and by how much
    ("ttft_layer_from", "layers"),
    ("ttft_layer", "layers"),
    ("ttft_layer_change_ms", "layers"),
    ("ttft_layer_summary", "layers"),
    ("usd_per_gpu_hour", "cost"),
    ("price_source", "cost"),
    ("cost_per_mtok_total", "cost"),
    ("cost_per_mtok_input", "cost"),
    ("cost_per_mtok_output", "cost"),
    ("kw_per_gpu", "cost"),
    ("kw_source", "cost"),
    ("tok_s_per_mw_provisioned", "cost"),
    ("output_tok_s_per_mw_provisioned", "cost"),
    ("tok_s_per_mw_measured", "cost"),
    ("output_tok_s_per_mw_measured", "cost"),
    ("measured_power_basis", "cost"),
    ("power_valid", "metric"),
    ("gpu_power_avg_w", "metric"),
    ("gpu_energy_j", "metric"),
    ("joules_per_output_token", "metric"),
    ("joules_per_total_token", "metric"),
    ("accuracy", "accuracy"),
    ("accuracy_stderr", "accuracy"),
    ("accuracy_task", "accuracy"),
    ("accuracy_threshold", "accuracy"),
    ("accuracy_status", "accuracy"),
    ("on_pareto", "pareto"),
    ("on_pareto_overall", "pareto"),
    ("on_pareto_latency", "pareto"),
    ("failure_reason", "point"),
    ("date", "point"),
    ("path", "row"),
)


def column_names(*sources: Source) -> tuple[str, ...]:
    """The columns from ``sources`` in row order; every column when none is named."""
    return tuple(name for name, source in ROW_COLUMNS if not sources or source in sources)


#: The result's own figures, by their flat (vLLM) names.
METRIC_FIELDS: tuple[str, ...] = column_names("metric")

#: The accuracy columns the report adds to a row.
ACCURACY_FIELDS: tuple[str, ...] = column_names("accuracy")
