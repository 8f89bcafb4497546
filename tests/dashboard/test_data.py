"""The dashboard's points carry the reasoning and speculative figures of the written files."""

from __future__ import annotations

import json
from pathlib import Path

from result_factory import make_model

from inferx_core.dashboard.data import COLUMNS, columnar, points_from_paths
from inferx_core.metrics.model import Distribution, ReasoningStats
from inferx_core.results.files import write_result
from inferx_core.telemetry.model import CpuEnergy, GpuPower, TelemetrySection


def test_reasoning_and_speculative_figures_reach_the_page_data(tmp_path: Path) -> None:
    reasoning = ReasoningStats(
        requests=4,
        total_reasoning_tokens=24,
        reasoning_token_sources={"usage": 4, "chunk_tokens": 0, "chunk_count": 0},
        no_answer_requests=0,
        ttfo_ms=Distribution(mean=31.0, median=30.0, std=2.0, percentiles={"p99": 35.0}),
        tpot_answer_ms=Distribution(mean=4.0, median=4.0, std=0.5, percentiles={"p99": 5.0}),
    )
    telemetry = TelemetrySection(
        gpu=GpuPower(power_valid=False, power_source="none"),
        cpu=CpuEnergy(cpu_energy_scope="package", cpu_energy_source="none"),
        engine_metrics={"spec_decode": {"source": "counters", "acceptance_rate": 0.6,
                                        "mean_acceptance_length": 2.8}},
    )  # fmt: skip
    result = make_model("reasoner-c2").model_copy(
        update={"reasoning": reasoning, "telemetry": telemetry}
    )
    write_result(tmp_path / "run", result)
    (point,) = points_from_paths([tmp_path / "run"])
    assert point["median_ttfo_ms"] == 30.0 and point["p99_ttfo_ms"] == 35.0
    assert point["total_reasoning_tokens"] == 24 and point["median_tpot_answer_ms"] == 4.0
    assert point["spec_mean_acceptance_length"] == 2.8 and point["spec_acceptance_rate"] == 0.6
    page = columnar([point])
    json.dumps(page, allow_nan=False)
    row = dict(zip(COLUMNS, page["rows"][0], strict=True))
    assert row["median_ttfo_ms"] == 30.0
