"""A/B comparison of two result sets: per-point ratios with a verdict, and the two
throughput/interactivity frontiers compared at chosen interactivities, and the
accuracy of matched points with its standard error (:mod:`.accuracy`).

Pure functions apart from reading ``.requests.jsonl`` sidecars (given paths).

Spread and verdict (what "the difference exceeds the run-to-run spread" means):

1. Each side's value of a metric gets a 95% confidence interval (CI):

   - *replicates*: when a side holds two or more distinct ``ok`` results of
     the same point (the same point id found in several of its folders), the
     value is their mean and the CI is mean +- t(0.975, n-1) x sd / sqrt(n).
     This is the real run-to-run spread and is preferred for every metric.
   - *per-request medians* (TTFT, TPOT, E2E latency p50, and interactivity =
     1000 / median TPOT): from the ``.requests.jsonl`` sidecar, the
     distribution-free order-statistic CI of the median (ranks
     n/2 -+ 1.96 sqrt(n)/2); without the sidecar, median +- 1.96 x 1.2533 x
     std / sqrt(n) from the result's ``std_*_ms`` and request count (normal
     approximation). The interactivity CI is the TPOT CI mapped through 1000/x.
   - *repeats* (``--repeats N``): a result run N times carries every run's
     value; the CI is the t-interval of their mean (``repeats`` section).
   - *throughput* of a single run has no within-run CI: its spread is unknown
     (only replicates or repeats give it).

2. The verdict is "better" or "worse" only when the relative difference is
   larger than the noise floor (``noise``, default 5%: a typical run-to-run
   variation of serving benchmarks) *and*, where both sides have a CI, the
   two CIs do not overlap. Otherwise "same" (within the spread). The basis
   of each verdict is reported (``ci`` or ``noise floor``).

Matching points: by point id when the two sides share any; else by the load
key (scenario, API, mode, concurrency or rate, parallelism), only where that
key is unique on both sides (e.g. vLLM vs SGLang, or one GPU vs another).

Frontiers: for each ISL/OSL scenario present on both sides, the frontier of
every ``ok`` point of that side (tok/s/gpu vs interactivity) is interpolated
linearly at each requested interactivity (None outside a frontier's range);
those verdicts use the noise floor only.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from inferx_core.analysis.accuracy import compare_pairs
from inferx_core.analysis.cost import CostOptions, cost_fields
from inferx_core.analysis.layers import layer_moved
from inferx_core.analysis.pareto import Frontier
from inferx_core.analysis.points import INTERACTIVITY, THROUGHPUT
from inferx_core.analysis.spread import Estimate, median_ci, median_ci_from_std
from inferx_core.metrics.stats import t_quantile_975
from inferx_core.results.model import PointResultBase
from inferx_core.results.read import LoadedResults, records_from_jsonl, requests_sidecar

Better = Literal["higher", "lower"]
Verdict = Literal["better", "worse", "same", "n/a"]

DEFAULT_NOISE = 0.05

__all__ = [
    "METRICS",
    "Comparison",
    "Estimate",
    "MetricSpec",
    "SideData",
    "compare",
    "decide",
    "default_levels",
    "estimate",
    "load_side",
    "match_points",
    "median_ci",
    "median_ci_from_std",
    "t_quantile_975",
]


@dataclass(frozen=True)
class MetricSpec:
    field: str
    label: str
    better: Better
    sample: str | None = None  # per-request metric behind a median ("ttft", "tpot", ...)


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(THROUGHPUT, "tok/s/gpu", "higher"),
    MetricSpec("output_throughput", "out tok/s", "higher"),
    MetricSpec(INTERACTIVITY, "tok/s/user", "higher", "intvty"),
    MetricSpec("median_ttft_ms", "TTFT p50 ms", "lower", "ttft"),
    MetricSpec("median_tpot_ms", "TPOT p50 ms", "lower", "tpot"),
    MetricSpec("median_e2el_ms", "E2E p50 ms", "lower", "e2el"),
)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _per_request_samples(path: Path, ignore_eos: bool) -> dict[str, list[float]]:
    from inferx_core.metrics.requests import judged_request

    out: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2el": []}
    for rec in records_from_jsonl(path):
        if rec.warmup:
            continue
        try:
            m = judged_request(rec, ignore_eos)  # as the point's summary: a short reply fails
        except (TypeError, ValueError, IndexError):
            continue
        if not m.ok:
            continue
        if m.ttft_ms is not None:
            out["ttft"].append(m.ttft_ms)
        if m.e2el_ms is not None:
            out["e2el"].append(m.e2el_ms)
        if m.tpot_ms is not None:
            out["tpot"].append(m.tpot_ms)
    return out


@dataclass
class SideData:
    """One side of a comparison: merged results, their rows, and where they live."""

    label: str
    loaded: LoadedResults
    rows: list[dict[str, Any]]
    options: CostOptions = field(default_factory=CostOptions)
    _samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def row(self, point_id: str) -> dict[str, Any] | None:
        return next((r for r in self.rows if r["point_id"] == point_id), None)

    def result(self, point_id: str) -> PointResultBase | None:
        return next((r for r in self.loaded.results if r.point_id == point_id), None)

    def samples(self, point_id: str) -> dict[str, list[float]] | None:
        if point_id not in self._samples:
            path = self.loaded.paths.get(point_id)
            sidecar = requests_sidecar(path) if path else None
            eos = getattr(getattr(self.result(point_id), "workload", None), "ignore_eos", 0) is True
            self._samples[point_id] = _per_request_samples(sidecar, eos) if sidecar else {}
        return self._samples[point_id] or None


def _value(result: PointResultBase, spec: MetricSpec, options: CostOptions) -> float | None:
    if spec.field == THROUGHPUT:  # per GPU as the rows count it (assumed GPUs included)
        return _num(cost_fields(result, options)[THROUGHPUT])
    return _num(result.metric(spec.field))


def load_side(
    label: str, paths: Sequence[Path | str], options: CostOptions | None = None
) -> SideData:
    """Load one side (folders or files) and build its rows."""
    from inferx_core.analysis.points import build_rows
    from inferx_core.results.read import load_results

    options = options or CostOptions()
    loaded = load_results(paths)
    return SideData(label, loaded, build_rows(loaded.results, options, loaded.paths), options)


def _repeats_estimate(
    side: SideData, point_id: str, spec: MetricSpec, value: float | None
) -> Estimate | None:
    result = side.result(point_id)
    repeats = result.repeats if result is not None else None
    stat = repeats.stats.get(spec.field) if repeats is not None else None
    if stat is None or stat.ci95_low is None or stat.ci95_high is None:
        return None
    n = sum(1 for v in stat.values if v is not None)
    # the value stays the point's own (its median run); the spread is that of its runs
    shown = value if value is not None else stat.median
    return Estimate(shown, stat.ci95_low, stat.ci95_high, f"repeats (n={n})", n)


def estimate(side: SideData, point_id: str, spec: MetricSpec) -> Estimate:
    """The side's value of one metric at one point, with its CI (see the module doc)."""
    row = side.row(point_id) or {}
    value = _num(row.get(spec.field))
    # 1. replicates
    versions = [v for v in side.loaded.versions.get(point_id, []) if v.status == "ok"]
    if len(versions) >= 2:
        vals = [_value(v, spec, side.options) for v in versions]
        clean = [v for v in vals if v is not None]
        if len(clean) >= 2:
            mean = statistics.fmean(clean)
            half = t_quantile_975(len(clean) - 1) * statistics.stdev(clean) / math.sqrt(len(clean))
            return Estimate(
                mean, mean - half, mean + half, f"replicates (n={len(clean)})", len(clean)
            )
    # 2. repeats of this run (--repeats N): the t-interval of the mean over its runs
    repeated = _repeats_estimate(side, point_id, spec, value)
    if repeated is not None:
        return repeated
    if value is None or spec.sample is None:
        return Estimate(value, basis="no spread (single run)" if value is not None else "missing")
    # 3. per-request medians
    sample = "tpot" if spec.sample == "intvty" else spec.sample
    samples = side.samples(point_id)
    low = high = None
    basis = "none"
    n = None
    if samples and samples.get(sample):
        found = median_ci(samples[sample])
        if found is not None:
            _, low, high = found
            n = len(samples[sample])
            basis = "median CI from requests (order statistics)"
    else:
        result = side.result(point_id)
        flat = result.flat() if result is not None else {}  # figures by their flat names
        std = _num(flat.get(f"std_{sample}_ms"))
        med = _num(flat.get(f"median_{sample}_ms"))
        count = flat.get("intvty_requests") if sample == "tpot" else flat.get("completed")
        if std is not None and med is not None and isinstance(count, int) and count > 0:
            ci = median_ci_from_std(med, std, count)
            if ci is not None:
                low, high = ci
                n = count
                basis = "median CI from std/sqrt(n) (normal approximation)"
    if low is None or high is None:
        return Estimate(value, basis="no spread available")
    if spec.sample == "intvty":
        # interactivity = 1000 / TPOT: map the TPOT CI through the decreasing 1000/x.
        lo = 1000.0 / high if high > 0 else None
        hi = 1000.0 / low if low > 0 else math.inf
        if lo is None:
            return Estimate(value, basis="no spread available")
        return Estimate(value, lo, None if math.isinf(hi) else hi, basis, n)
    return Estimate(value, low, high, basis, n)


def decide(
    a: Estimate, b: Estimate, better: Better, noise: float = DEFAULT_NOISE
) -> dict[str, Any]:
    """Ratio B/A and the verdict for B against A (see the module doc for the rule)."""
    if a.value is None or b.value is None:
        return {"ratio": None, "change": None, "verdict": "n/a", "basis": "missing value"}
    if a.value == 0:
        return {"ratio": None, "change": None, "verdict": "n/a", "basis": "A is zero"}
    ratio = b.value / a.value
    change = ratio - 1.0
    gain = change if better == "higher" else -change
    if abs(change) <= noise:
        return {
            "ratio": ratio,
            "change": change,
            "verdict": "same",
            "basis": f"|change| <= noise floor {noise:.0%}",
        }
    if a.has_ci and b.has_ci:
        assert a.low is not None and a.high is not None
        assert b.low is not None and b.high is not None
        if b.low <= a.high and a.low <= b.high:
            return {"ratio": ratio, "change": change, "verdict": "same", "basis": "CIs overlap"}
        basis = "ci"
    else:
        basis = "noise floor"
    return {
        "ratio": ratio,
        "change": change,
        "verdict": "better" if gain > 0 else "worse",
        "basis": basis,
    }


def _load_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        row.get("scenario"),
        row.get("api"),
        row.get("mode"),
        row.get("concurrency"),
        row.get("request_rate"),
        row.get("tp"),
        row.get("pp"),
        row.get("dp"),
        row.get("ep"),
    )


def match_points(
    a_rows: Sequence[Mapping[str, Any]],
    b_rows: Sequence[Mapping[str, Any]],
    by: Literal["auto", "point_id", "load"] = "auto",
) -> tuple[list[tuple[str, str, str]], str]:
    """[(label, a_point_id, b_point_id)] and the rule used ("point_id" or "load")."""
    a_ids = [r["point_id"] for r in a_rows]
    b_ids = {r["point_id"] for r in b_rows}
    common = [pid for pid in a_ids if pid in b_ids]
    if by == "point_id" or (by == "auto" and common):
        return [(pid, pid, pid) for pid in common], "point_id"

    def unique(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], str]:
        seen: dict[tuple[Any, ...], list[str]] = {}
        for r in rows:
            seen.setdefault(_load_key(r), []).append(r["point_id"])
        return {k: v[0] for k, v in seen.items() if len(v) == 1}

    ua, ub = unique(a_rows), unique(b_rows)
    pairs = []
    for key, pid in ua.items():
        if key in ub:
            scen, _api, mode, conc, rate, tp, *_ = key
            level = f"c{conc}" if mode != "open" else f"r{rate:g}"
            label = f"{scen} tp{tp} {level}" if tp is not None else f"{scen} {level}"
            pairs.append((label, pid, ub[key]))
    return pairs, "load"


def default_levels(fa: Frontier, fb: Frontier, count: int = 3) -> list[float]:
    """Interactivities inside both frontiers' ranges (quartiles of the overlap)."""
    if not len(fa) or not len(fb):
        return []
    lo, hi = max(fa.x[0], fb.x[0]), min(fa.x[-1], fb.x[-1])
    if lo > hi:
        return []
    if lo == hi:
        return [lo]
    fracs = [(i + 1) / (count + 1) for i in range(count)]
    return [float(f"{lo + (hi - lo) * f:.3g}") for f in fracs]


@dataclass
class Comparison:
    """Everything ``inferx compare`` prints (``to_json`` for machines)."""

    a_label: str
    b_label: str
    matched_by: str
    points: list[dict[str, Any]]
    unmatched_a: list[str]
    unmatched_b: list[str]
    frontiers: list[dict[str, Any]]
    noise: float
    # scenario -> (A's, B's) interactivity range of the frontier (None: no frontier)
    frontier_ranges: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    accuracy: list[dict[str, Any]] = field(default_factory=list)  # analysis.accuracy

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_label,
            "b": self.b_label,
            "matched_by": self.matched_by,
            "noise_floor": self.noise,
            "points": self.points,
            "unmatched_a": self.unmatched_a,
            "unmatched_b": self.unmatched_b,
            "frontiers": self.frontiers,
            "frontier_ranges": {k: list(v) for k, v in self.frontier_ranges.items()},
            "accuracy": self.accuracy,
        }

    @property
    def layer_lines(self) -> list[str]:
        """Per matched point with both anatomies: which layer of the TTFT moved."""
        return [f"{p['label']}: {p['layers']['summary']}" for p in self.points if p.get("layers")]

    @property
    def regressions(self) -> list[str]:
        out = [
            f"{p['label']}: {m['label']} {m['change']:+.1%}"
            for p in self.points
            for m in p["metrics"]
            if m["verdict"] == "worse"
        ]
        out += [
            f"{f['scenario']} at {f['at']:g} tok/s/user: tok/s/gpu {f['change']:+.1%}"
            for f in self.frontiers
            if f["verdict"] == "worse"
        ]
        out += [x["summary"] for x in self.accuracy if x["verdict"] == "worse"]
        return out


def _frontier(rows: Sequence[Mapping[str, Any]]) -> Frontier:
    pts = [(r.get(INTERACTIVITY), r.get(THROUGHPUT)) for r in rows if r.get("status") == "ok"]
    return Frontier.of(pts)


def _not_ok_metric(spec: MetricSpec, side: str, row: Mapping[str, Any]) -> dict[str, Any]:
    verdict = f": {row.get('status')} ({why})" if (why := row.get("validity_failing")) else ""
    return {
        "field": spec.field,
        "label": spec.label,
        "a": None,
        "b": None,
        "ratio": None,
        "change": None,
        "verdict": "n/a",
        "basis": f"point not ok in {side}{verdict}",
    }


def _point_metrics(a: SideData, b: SideData, pa: str, pb: str, noise: float) -> list[dict]:
    """One verdict per metric in METRICS for the matched pair (pa in A, pb in B)."""
    ra, rb = a.row(pa) or {}, b.row(pb) or {}
    metrics = []
    for spec in METRICS:
        if ra.get("status") != "ok" or rb.get("status") != "ok":
            bad = ("A", ra) if ra.get("status") != "ok" else ("B", rb)  # its verdict shows
            metrics.append(_not_ok_metric(spec, *bad))
            continue
        ea, eb = estimate(a, pa, spec), estimate(b, pb, spec)
        metrics.append(
            {
                "field": spec.field,
                "label": spec.label,
                "better": spec.better,
                "a": ea.to_json(),
                "b": eb.to_json(),
                **decide(ea, eb, spec.better, noise),
            }
        )
    return metrics


def _layers(a: SideData, b: SideData, pa: str, pb: str, noise: float) -> dict[str, Any] | None:
    ra, rb = a.result(pa), b.result(pb)
    return layer_moved(ra.anatomy if ra else None, rb.anatomy if rb else None, noise)


def _frontier_comparison(
    a: SideData, b: SideData, at: Sequence[float] | None, noise: float
) -> tuple[list[dict[str, Any]], dict[str, tuple[Any, Any]]]:
    """(throughput verdicts at each interactivity level, frontier x-ranges) per shared scenario."""
    frontiers = []
    ranges: dict[str, tuple[Any, Any]] = {}
    scenarios = sorted({r["scenario"] for r in a.rows} & {r["scenario"] for r in b.rows})
    for scen in scenarios:
        fa = _frontier([r for r in a.rows if r["scenario"] == scen])
        fb = _frontier([r for r in b.rows if r["scenario"] == scen])
        range_a = [fa.x[0], fa.x[-1]] if len(fa) else None
        range_b = [fb.x[0], fb.x[-1]] if len(fb) else None
        ranges[scen] = (range_a, range_b)
        for level in list(at) if at else default_levels(fa, fb):
            va, vb = fa.interpolate(level), fb.interpolate(level)
            verdict = decide(Estimate(va), Estimate(vb), "higher", noise)
            frontiers.append(
                {
                    "scenario": scen,
                    "at": float(level),
                    "a": va,
                    "b": vb,
                    "a_range": range_a,
                    "b_range": range_b,
                    **verdict,
                }
            )
    return frontiers, ranges


def compare(
    a: SideData,
    b: SideData,
    *,
    at: Sequence[float] | None = None,
    noise: float = DEFAULT_NOISE,
    by: Literal["auto", "point_id", "load"] = "auto",
) -> Comparison:
    """Compare B against A: per matching point, and along the frontiers."""
    if not 0 <= noise < 1:
        raise ValueError(f"noise must be in [0, 1), got {noise}")
    pairs, rule = match_points(a.rows, b.rows, by)
    points = [
        {
            "label": label,
            "a_point": pa,
            "b_point": pb,
            "metrics": _point_metrics(a, b, pa, pb, noise),
            # Which layer of the TTFT moved (the engine's own clock; None without it).
            "layers": _layers(a, b, pa, pb, noise),
        }
        for label, pa, pb in pairs
    ]
    matched_a = {pa for _, pa, _ in pairs}
    matched_b = {pb for _, _, pb in pairs}
    frontiers, ranges = _frontier_comparison(a, b, at, noise)
    return Comparison(
        a.label,
        b.label,
        rule,
        points,
        [r["point_id"] for r in a.rows if r["point_id"] not in matched_a],
        [r["point_id"] for r in b.rows if r["point_id"] not in matched_b],
        frontiers,
        noise,
        ranges,
        compare_pairs(pairs, a.result, b.result),
    )
