"""Repeats: one load point run N times, interleaved with the others, summarised.

One run of a point says nothing about run-to-run spread (the demo's c=8
gave 1255, 661 and 725 tok/s in three runs). With ``repeats: N`` every point
runs N times, each round over all points so drift hits all alike. The
point's result is then its *median run* (the repeat with the median output
throughput: real measured numbers, never an average of runs), and its
``repeats`` section holds, for the headline figures, every run's value,
their median, min, max and the 95% confidence interval of the mean
(Student t with n - 1 degrees of freedom).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from inferx_core.metrics.stats import t_quantile_975

#: The figures summarised across repeats (flat vLLM/InferenceX names).
REPEAT_METRICS: tuple[str, ...] = (
    "output_throughput",
    "total_token_throughput",
    "request_throughput",
    "tput_per_gpu",
    "median_intvty",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "median_itl_ms",
    "median_e2el_ms",
)
#: The figure whose median run stands for the point.
ORDER_BY = "output_throughput"


class RepeatStat(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    values: list[float | None]  # one per repeat, in run order
    median: float | None
    min: float | None
    max: float | None
    ci95_low: float | None  # of the mean; None with fewer than two values
    ci95_high: float | None


class RepeatRun(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    repeat: int
    status: str
    date: str
    failure_reason: str | None = None


class RepeatSummary(BaseModel):
    """The ``repeats`` section of a point run N times."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int
    chosen: int  # the repeat whose result this is (median output throughput)
    runs: list[RepeatRun]
    stats: dict[str, RepeatStat]


def repeat_stat(values: Sequence[float | None]) -> RepeatStat:
    clean = [float(v) for v in values if v is not None and math.isfinite(v)]
    low = high = None
    if len(clean) >= 2:
        mean = statistics.fmean(clean)
        half = t_quantile_975(len(clean) - 1) * statistics.stdev(clean) / math.sqrt(len(clean))
        low, high = mean - half, mean + half
    return RepeatStat(
        values=list(values),
        median=statistics.median(clean) if clean else None,
        min=min(clean) if clean else None,
        max=max(clean) if clean else None,
        ci95_low=low,
        ci95_high=high,
    )


def median_run(flats: Sequence[Mapping[str, object]]) -> int:
    """Index of the run with the median output throughput (the lower middle for even n);
    runs without the figure sort first, so a measured run is preferred."""

    def key(i: int) -> tuple[bool, float]:
        v = flats[i].get(ORDER_BY)
        if isinstance(v, (int, float)) and math.isfinite(v):
            return True, float(v)
        return False, 0.0

    order = sorted(range(len(flats)), key=key)
    measured = [i for i in order if key(i)[0]]
    pool = measured or order
    return pool[(len(pool) - 1) // 2]


def summarize_repeats(
    flats: Sequence[Mapping[str, object]], runs: Sequence[RepeatRun]
) -> RepeatSummary:
    chosen = median_run(flats)
    stats = {m: repeat_stat([_num(f.get(m)) for f in flats]) for m in REPEAT_METRICS}
    return RepeatSummary(n=len(flats), chosen=runs[chosen].repeat, runs=list(runs), stats=stats)


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)
