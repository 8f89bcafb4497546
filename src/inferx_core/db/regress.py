"""Regression verdicts between two labels, with ``inferx compare``'s matching and spread.

Each label's points become one side of :func:`inferx_core.analysis.compare.compare`:
points are matched by point id (else by load key), several stored versions of
one point id under a label are its replicates (mean and t-interval), a single
run's latency medians get the order-statistics CI from its ``.requests.jsonl``
sidecar when the ingested file is still on disk beside it, else the normal
approximation from its ``std`` and request count (sidecars are not stored), and a
difference is a regression only beyond the noise floor and, where both sides
have a CI, when the CIs do not overlap.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from inferx_core.analysis.compare import DEFAULT_NOISE, METRICS, Comparison, SideData, compare
from inferx_core.analysis.cost import CostOptions
from inferx_core.analysis.points import THROUGHPUT, build_rows
from inferx_core.db.records import content_hash
from inferx_core.db.store import Filters, ResultsDB
from inferx_core.errors import UserFacingError
from inferx_core.results.model import parse_result
from inferx_core.results.read import LoadedResults

__all__ = ["Regression", "metric_fields", "regress", "side_from_db"]

_ORDER = {"worse": 0, "better": 1, "same": 2, "n/a": 3}


def metric_fields(names: Sequence[str] | None) -> list[str]:
    """The compared metrics: names given as fields or labels; all of them when none."""
    if not names:
        return [m.field for m in METRICS]
    known = {m.field: m.field for m in METRICS} | {m.label: m.field for m in METRICS}
    out = []
    for name in names:
        if name not in known:
            choices = ", ".join(m.field for m in METRICS)
            raise UserFacingError(f"unknown metric {name!r} for db regress; one of: {choices}")
        out.append(known[name])
    return out


def _same_file(path: str | None, digest: str) -> bool:
    """True when ``path`` still holds the stored result (not a later rerun's)."""
    if not path or not Path(path).is_file():
        return False
    try:
        return content_hash(parse_result(json.loads(Path(path).read_text("utf-8")))) == digest
    except (OSError, ValueError, TypeError, KeyError):
        return False


def side_from_db(
    db: ResultsDB, label: str, filters: Filters | None = None, options: CostOptions | None = None
) -> SideData:
    """One side of a comparison: the label's points, replicates kept as versions."""
    filters = dataclasses.replace(filters or Filters(), label=[label])
    stored = db.points(filters, with_json=True)
    if not stored:
        raise UserFacingError(f"no points under label {label!r} (see `inferx db list --labels`)")
    versions: dict[str, list[Any]] = {}
    paths: dict[str, Path] = {}
    for item in sorted(stored, key=lambda s: s.row["date"] or "", reverse=True):
        result, row = item.result, item.row
        if result.point_id not in versions and _same_file(row["source_path"], row["content_hash"]):
            paths[result.point_id] = Path(row["source_path"])  # its sidecars, if still there
        versions.setdefault(result.point_id, []).append(result)
    loaded = LoadedResults(
        results=[versions[pid][0] for pid in sorted(versions)], paths=paths, versions=versions
    )
    options = options or CostOptions()
    return SideData(label, loaded, build_rows(loaded.results, options), options)


@dataclass
class Regression:
    """The comparison, the metrics judged, and one verdict per matched point."""

    comparison: Comparison
    fields: list[str]
    verdicts: list[dict[str, Any]]

    @property
    def regressions(self) -> list[str]:
        out = [
            f"{v['label']}: {m['label']} {m['change']:+.1%} ({m['basis']})"
            for v in self.verdicts
            for m in v["metrics"]
            if m["verdict"] == "worse"
        ]
        if THROUGHPUT in self.fields:
            out += [
                f"{f['scenario']} at {f['at']:g} tok/s/user: tok/s/gpu {f['change']:+.1%}"
                for f in self.comparison.frontiers
                if f["verdict"] == "worse"
            ]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.comparison.a_label,
            "candidate": self.comparison.b_label,
            "matched_by": self.comparison.matched_by,
            "noise_floor": self.comparison.noise,
            "metrics": self.fields,
            "points": self.verdicts,
            "frontiers": self.comparison.frontiers,
            "unmatched_baseline": self.comparison.unmatched_a,
            "unmatched_candidate": self.comparison.unmatched_b,
            "regressions": self.regressions,
        }


def regress(
    db: ResultsDB,
    baseline: str,
    candidate: str,
    *,
    metrics: Sequence[str] | None = None,
    filters: Filters | None = None,
    noise: float = DEFAULT_NOISE,
    by: Literal["auto", "point_id", "load"] = "auto",
) -> Regression:
    """Candidate against baseline; verdict per point over the chosen metrics."""
    chosen = metric_fields(metrics)
    a = side_from_db(db, baseline, filters)
    b = side_from_db(db, candidate, filters)
    comparison = compare(a, b, noise=noise, by=by)
    if not comparison.points:
        raise UserFacingError(
            f"no point of {candidate!r} matches one of {baseline!r} (by point id or by "
            "scenario, API, load level and parallelism): nothing to judge"
        )
    verdicts = []
    for point in comparison.points:
        judged = [m for m in point["metrics"] if m["field"] in chosen]
        worst = min((m["verdict"] for m in judged), key=_ORDER.__getitem__, default="n/a")
        verdicts.append(
            {
                "label": point["label"],
                "baseline_point": point["a_point"],
                "candidate_point": point["b_point"],
                "verdict": worst,
                "metrics": judged,
            }
        )
    return Regression(comparison, chosen, verdicts)
