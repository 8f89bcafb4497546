"""Capacity at an SLO derived from points already measured: a plain sweep, imported results.

The buyer's table ranks server configurations by cost at their capacity. A search
answers that itself (``search/*.json``); for the other points of a report (a sweep
of concurrencies or rates, InferenceX or vLLM results brought in by ``inferx
import``) :func:`derived_capacities` derives the same answer from the points, one
per server configuration and SLO:

- the points are grouped by server configuration and scenario (an InferX point id
  without its load level; for an imported point, its hardware, engine, model,
  precision, scenario and parallelism) and load axis (closed loop: concurrency;
  open loop: rate, per concurrency cap); a group of two load levels or more is a
  sweep (a lone point, e.g. one ``inferx bench`` run beside a search, is none);
- each point is judged as a probe is (:func:`~inferx_core.metrics.search_judge
  .judge_point`, the one verdict): from its request records where they are on disk (the
  joint goodput share, exactly; replies cut short fail; a pass counts only where the
  level was held), else, for an imported point, each per-request limit on its goodput
  percentile (``ttft_ms<=500`` at 0.99: ``p99_ttft_ms<=500``; ``intvty`` as TPOT),
  which a failure proves but a pass only bounds (the joint share is not known);
- every point counts: a failed or invalid point is a fail at its level (or, when it
  says nothing about the server, e.g. a starved client, a level not judged), and a
  level fails when any of its points fails;
- the capacity is the last passing level below the first level that did not pass (the
  boundary, as a search finds it), with that pass and that fail as the evidence; a
  level that could not be judged ends the claim there (``undetermined``); a higher
  level that passes again is named in the reason, not taken.

The answer is a :class:`~inferx_core.metrics.search_model.SearchSummary` like a
search's, so the table shows both alike, each row marked with its source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.analysis.points import series_of
from inferx_core.config.slo import SloTarget
from inferx_core.metrics.knee import LevelFigures, find_knee
from inferx_core.metrics.search import (
    Measurement,
    Probe,
    ProbeState,
    SearchOutcome,
    SearchStatus,
)
from inferx_core.metrics.search_judge import Level, judge_point
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.results.model import PointResultBase
from inferx_core.results.read import read_request_records

__all__ = ["SOURCES", "DerivedCapacity", "derived_capacities"]

#: A buyer's-table row's source: a search's summary, a plain sweep's points, imported points.
SOURCES = ("search", "sweep points", "import")


@dataclass(frozen=True)
class DerivedCapacity:
    summary: SearchSummary
    source: str  # "sweep points" | "import"
    basis: str  # how its points were judged: "request records" | "p99 per limit" ...


@dataclass
class _Group:
    label: str
    over: str  # concurrency | rate
    source: str
    server_id: str | None
    points: list[tuple[float, PointResultBase]]


def _level(result: PointResultBase) -> tuple[str, float, Any] | None:
    """(axis, level, concurrency cap) of a closed- or open-loop point; None for others."""
    ident = result.identity
    if ident.mode == "closed" and ident.concurrency is not None:
        return "concurrency", float(ident.concurrency), None
    if ident.mode == "open" and ident.request_rate is not None:
        return "rate", float(ident.request_rate), ident.max_concurrency
    return None


def _import_label(row: Mapping[str, Any]) -> str:
    par = " ".join(f"{k}{row[k]}" for k in ("tp", "pp", "dp", "ep") if row.get(k) is not None)
    return f"{row['group']} | {par or 'tp?'}"


def _groups(
    results: Iterable[PointResultBase], rows: Mapping[str, Mapping[str, Any]]
) -> list[_Group]:
    """The points that are no search's probe, by server configuration and load axis
    (``rows``: each point's report row, by point id, for an import's hardware labels)."""
    plain = [r for r in results if "search" not in (r.provenance.extra or {})]
    groups: dict[tuple[Any, ...], _Group] = {}
    for result in plain:
        level = _level(result)
        if level is None:
            continue
        over, value, cap = level
        imported = result.provenance.imported_from is not None
        label = _import_label(rows[result.point_id]) if imported else series_of(result.point_id)
        if cap is not None:
            label = f"{label} (cap {cap})"
        key = (imported, label, over)
        source = "import" if imported else "sweep points"
        group = groups.setdefault(key, _Group(label, over, source, None, []))
        group.server_id = group.server_id or result.identity.server_id
        group.points.append((value, result))
    # a sweep: two load levels or more (one point bounds nothing on one side)
    return [g for g in groups.values() if len({level for level, _ in g.points}) > 1]


def _proxy(target: SloTarget) -> tuple[SloTarget | None, str]:
    """The per-request limits as limits on their goodput percentile (no records)."""
    pct = f"p{target.goodput * 100:g}"
    slo = dict(target.percentile_limits())
    for key, limit in target.per_request().items():
        if key == "itl_ms":
            return None, "itl_ms (a request's largest gap) needs the request records"
        name, value = ("tpot_ms", 1000.0 / limit) if key == "intvty" else (key, limit)
        full = f"{pct}_{name}"
        slo[full] = min(slo.get(full, value), value)
    return SloTarget(limits=slo), f"{pct} per limit (no request records)"


def _judge(
    result: PointResultBase, target: SloTarget, path: Path | None, level: Level
) -> tuple[Measurement, str]:
    """The point's verdict and its basis: the request records, else its percentiles."""
    pid, flat = result.point_id, result.flat()
    status, why = result.status, result.failure_reason
    records = read_request_records(path) if path is not None else None
    if records is not None or not target.per_request():
        verdict = judge_point(status, why, flat, records, target, point_id=pid, level=level)
        return verdict, "request records" if target.per_request() else "reported percentiles"
    proxy, basis = _proxy(target)
    if proxy is None:
        return Measurement(None, reason=basis, point_id=pid), basis
    return judge_point(status, why, flat, None, proxy, point_id=pid), basis


def _probe(level: float, judged: Sequence[Measurement]) -> Probe:
    """One level from its points: it fails if any point fails (the stricter), and is not
    judged if any point could not be (a pass there is not proven)."""
    scored = [m for m in judged if m.score is not None]
    failing = [m for m in scored if (m.score or 0.0) > 1.0]
    unknown = [m for m in judged if m.score is None]
    if unknown and not failing:
        return Probe(level, "unknown", tuple(judged), None, None, reason=unknown[0].reason)
    worst = max(scored, key=lambda m: m.score or 0.0)
    state: ProbeState = "pass" if (worst.score or 0.0) <= 1.0 else "fail"
    lo, hi = min(m.score or 0.0 for m in scored), worst.score or 0.0
    spread = (lo, hi) if len(scored) > 1 else None
    notes = "; ".join(dict.fromkeys(m.note for m in scored if m.note))  # a run too short
    return Probe(
        level, state, (worst,), worst.score, spread, bool(notes), worst.binding, notes or None
    )


def _blocked(probes: list[Probe]) -> tuple[SearchOutcome | None, list[Probe]]:
    """An outcome when no level can be claimed; else the levels up to the first one that
    did not pass (a level not judged ends the claim: nothing above it is proven)."""
    if not any(p.state != "unknown" for p in probes):
        why = f"no point could be judged: {probes[0].reason if probes else 'no points'}"
        n = len(probes)
        return SearchOutcome("undetermined", None, None, None, tuple(probes), n, why), []
    upto = next((i for i, p in enumerate(probes) if p.state != "pass"), len(probes))
    return None, probes[: upto + 1]


def _outcome(probes: list[Probe], over: str) -> SearchOutcome:
    """The boundary: the last pass below the first level that did not pass."""
    unit = "c" if over == "concurrency" else "r"
    done, walked = _blocked(probes)
    if done is not None:
        return done
    stop = walked[-1] if walked[-1].state != "pass" else None
    last_pass = next((p for p in reversed(walked) if p.state == "pass"), None)
    first_fail = stop if stop is not None and stop.state == "fail" else None
    status: SearchStatus
    if stop is None:
        status, reason = "above_max", f"every point passes, up to {unit}{walked[-1].level:g}"
    elif stop.state == "unknown":
        status = "undetermined"
        below = f"passes up to {unit}{last_pass.level:g}; " if last_pass else ""
        reason = f"{below}undetermined above: {unit}{stop.level:g} not judged ({stop.reason})"
    elif last_pass is None:
        status, reason = "below_min", f"fails at the lowest point {unit}{stop.level:g}"
    else:
        status = "found"
        reason = f"passes at {unit}{last_pass.level:g}, fails at {unit}{stop.level:g}"
    if last_pass is not None and last_pass.uncertain:  # the claim says what it rests on
        reason += f"; uncertain at {unit}{last_pass.level:g}: {last_pass.reason}"
    again = [p for p in probes if stop and p.state == "pass" and p.level > stop.level]
    if again:
        reason += "; passes again above it at " + ", ".join(f"{unit}{p.level:g}" for p in again)
        reason += " (not monotone: the capacity is the level below the first fail)"
    capacity = last_pass.level if last_pass else None
    return SearchOutcome(
        status, capacity, last_pass, first_fail, tuple(probes), len(probes), reason
    )


def _figures(points: Sequence[tuple[float, PointResultBase]]) -> list[LevelFigures]:
    out = []
    for level, result in points:
        flat = result.flat()
        tput, lat = flat.get("output_throughput"), flat.get("mean_e2el_ms")
        if (
            result.status == "ok"
            and isinstance(tput, (int, float))
            and isinstance(lat, (int, float))
        ):
            out.append(LevelFigures(level, float(tput), float(lat)))
    return out


def _derive(group: _Group, target: SloTarget, paths: Mapping[str, Path]) -> DerivedCapacity:
    by_level: dict[float, list[Measurement]] = {}
    bases: set[str] = set()
    for level, result in sorted(group.points, key=lambda p: (p[0], p[1].point_id)):
        verdict, basis = _judge(
            result, target, paths.get(result.point_id), Level(group.over, level)
        )
        by_level.setdefault(level, []).append(verdict)
        bases.add(basis)
    probes = [_probe(level, judged) for level, judged in sorted(by_level.items())]
    outcome = _outcome(probes, group.over)
    capacity_id = outcome.last_pass.point_id if outcome.last_pass else None
    at = next((r for _, r in group.points if r.point_id == capacity_id), None)
    summary = SearchSummary.build(
        outcome,
        ids=(group.label, group.server_id),
        constraint=(group.over, target),
        at_capacity=at.flat() if at is not None else {},
        knee=find_knee(sorted(_figures(group.points), key=lambda f: f.level)),
    )
    return DerivedCapacity(summary, group.source, ", ".join(sorted(bases)))


def derived_capacities(
    results: Iterable[PointResultBase],
    constraints: Sequence[SloTarget],
    rows: Mapping[str, Mapping[str, Any]],
    paths: Mapping[str, Path] | None = None,
) -> list[DerivedCapacity]:
    """Each server configuration's capacity under each target (on the group's own axis).

    ``rows`` (point id -> its report row): the points' rows, built once by the report
    (an import's hardware labels); ``paths`` (point id -> result file) lets a point be
    judged from its request records."""
    groups = _groups(results, rows)
    return [_derive(g, target, paths or {}) for target in constraints for g in groups]
