"""The capacity search driver: every probe is a normal load point.

:func:`search_probes` hands :func:`~inferx_core.metrics.search.search_capacity` a
``measure(level, run)`` that runs one point (closed loop at a concurrency, or
open loop at a rate) through the :class:`SearchPlan`'s probe runner, in the
server's :class:`~inferx_core.pipeline.point.server_plan.ServerPlan` (its SLOs and
percentiles the search's: :func:`probe_plan`), judges
it (:func:`~inferx_core.metrics.search_verdict.judge_run`) and tags its result
with the search (``provenance.extra.search``). A probe run again for noise
keeps its runs in ``OUTPUT/repeats/r<k>/`` and is then combined by the repeats
machinery (:func:`~inferx_core.pipeline.point.repeats.combine`): the point's result is
its median run with a ``repeats`` section. ``resume`` reuses every complete
run already on disk, so an interrupted search replays its decisions and goes
on where it stopped. The answer is a :class:`SearchSummary` written to
``OUTPUT/search/<search_id>.json``. Its two entries: :mod:`.running` (a running
server, ``inferx search``) and :mod:`.launched` (``search:`` in ``inferx run``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from inferx_core.config.models import LoadProfile, Workload
from inferx_core.config.points import LoadPoint, point_id_for
from inferx_core.config.search import SearchConfig
from inferx_core.errors import UserFacingError
from inferx_core.metrics.knee import LevelFigures, find_knee
from inferx_core.metrics.search import (
    Budget,
    Measurement,
    SearchSpace,
    search_capacity,
    verdict_run,
)
from inferx_core.metrics.search_judge import Level, judge_point
from inferx_core.metrics.search_model import SearchSummary
from inferx_core.pipeline.point.measure import DEFAULT_PERCENTILES, PointOutcome
from inferx_core.pipeline.point.repeats import combine, repeat_dir
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.pipeline.search.probes import reusable_probe
from inferx_core.results.files import REQUESTS_SUFFIX, TELEMETRY_SUFFIX
from inferx_core.results.search_files import write_search_summary

__all__ = [
    "ProbeRunner",
    "SearchPlan",
    "SearchRun",
    "SearchSetupError",
    "check_searchable",
    "probe_plan",
    "search_id_for",
    "search_probes",
]

#: Runs one run of one probe: (point, point id, folder or None, search tag) -> its outcome.
#: The tag goes into the result's ``provenance.extra.search``; the folder is the output
#: folder for a probe's first run and ``repeats/r<k>`` for its k-th.
ProbeRunner = Callable[[LoadPoint, str, Path | None, dict[str, Any]], PointOutcome]


class SearchSetupError(UserFacingError):
    """A search asked of a load it cannot search (a trace, stages, repeats)."""


@dataclass
class SearchRun:
    summary: SearchSummary
    outcomes: list[PointOutcome]  # one per probed level, in probe order
    summary_path: Path | None = None


@dataclass
class SearchPlan:
    """What a search needs of its server: ids, folder, and how to run one probe there.

    ``inferx bench`` runs probes against a running server, ``inferx run`` against the
    engine it launched (its target, watchdog and provenance)."""

    search: SearchConfig
    workload: Workload
    prefix: str  # of the point ids: the bench name, or the run's server id
    output_dir: Path | None
    run_probe: ProbeRunner
    max_concurrency: int | None = None  # of a rate probe (load.max_concurrency)
    server_id: str | None = None


def search_id_for(prefix: str, workload: Workload, search: SearchConfig) -> str:
    first = point_id_for(prefix, workload, LoadPoint(concurrency=1))
    return f"{first.rsplit('-', 1)[0]}-search-{search.over}"


def check_searchable(workload: Workload, load: LoadProfile, search: SearchConfig) -> None:
    if workload.kind == "trace" or load.stages:
        raise SearchSetupError(
            "search: a trace or staged load has no level to search; use a random or "
            "dataset workload (or drop search:)"
        )
    # concurrency [1] is also what a load without levels is filled with (LoadProfile),
    # so only other levels are known to be the user's
    given = {"concurrency": load.concurrency != [1], "request_rate": True}
    for name in ("concurrency", "request_rate"):
        if getattr(load, name) and given[name]:
            levels = ", ".join(f"{v:g}" for v in getattr(load, name))
            raise SearchSetupError(
                f"search: load.{name} [{levels}] (or matrix.{name}) would be ignored: the "
                f"search picks its own levels; give their range as search.start/min/max "
                f"(over: {'concurrency' if name == 'concurrency' else 'rate'}) and drop "
                f"load.{name}"
            )
    if load.repeats > 1:
        raise SearchSetupError(
            "search: probes are repeated only near the limit (search.max_runs); "
            "drop load.repeats / --repeats"
        )


def probe_percentiles(wanted: list[float], search: SearchConfig) -> list[float]:
    """``wanted`` plus the percentiles the search's percentile limits read."""
    return [*wanted, *(p for p in search.slo.percentiles_read() if p not in wanted)]


def probe_plan(plan: ServerPlan, search: SearchConfig) -> ServerPlan:
    """The server's plan for the search's probes: the search's target (a probe's
    goodput counts its per-request limits), and the plan's percentiles plus those the
    search's limits read."""
    wanted = list(plan.percentiles or DEFAULT_PERCENTILES)
    return replace(plan, slo=search.slo, percentiles=probe_percentiles(wanted, search))


@dataclass
class _Prober:
    """Runs, reuses and judges the probes; keeps each level's runs for the summary."""

    plan: SearchPlan
    search_id: str
    resume: bool
    on_point: Callable[[PointOutcome], None] | None
    on_skip: Callable[[str], None] | None
    runs: dict[float, list[PointOutcome]] = field(default_factory=dict)
    verdicts: dict[float, list[Measurement]] = field(default_factory=dict)  # one per run
    finals: dict[float, PointOutcome] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # probe files not reused, and why

    def point(self, level: float) -> LoadPoint:
        if self.plan.search.over == "concurrency":
            return LoadPoint(concurrency=int(level))
        return LoadPoint(request_rate=level, max_concurrency=self.plan.max_concurrency)

    def measure(self, level: float, run: int) -> Measurement:
        for done in [lv for lv in self.runs if lv != level and lv not in self.finals]:
            self.settle(done)  # the search moved on: that level is decided
        point = self.point(level)
        pid = point_id_for(self.plan.prefix, self.plan.workload, point)
        out = self.plan.output_dir
        if run == 2 and out is not None:
            _keep_first_run(out, pid)
        try:
            outcome = self._reused(pid, level, run) or self._run(point, pid, run)
        except (UserFacingError, OSError) as exc:  # a server gone: tokenize, connect...
            verdict = Measurement(None, reason=f"the probe could not run: {exc}", point_id=pid)
            self.verdicts.setdefault(level, []).append(verdict)
            return verdict
        self.runs.setdefault(level, []).append(outcome)
        res, search = outcome.result, self.plan.search
        seconds = search.probe_seconds(level) if search.over == "rate" else None
        verdict = judge_point(
            res.status,
            res.failure_reason,
            res.flat(),
            outcome.records,
            search.slo,
            point_id=pid,
            level=Level(search.over, level, seconds),
        )
        self.verdicts.setdefault(level, []).append(verdict)
        return verdict

    def _folder(self, run: int) -> Path | None:
        out = self.plan.output_dir
        return out if out is None or run == 1 else repeat_dir(out, run)

    def _reused(self, pid: str, level: float, run: int) -> PointOutcome | None:
        """The run already on disk (``--resume``), once checked to be this probe's."""
        out = self.plan.output_dir
        if not self.resume or out is None:
            return None
        for folder in [out / "repeats" / f"r{run}"] + ([out] if run == 1 else []):
            outcome, why = reusable_probe(folder, pid, level)
            if why is not None:
                self.notes.append(why)
            if outcome is not None:
                if self.on_skip is not None and run == 1:
                    self.on_skip(pid)
                return outcome
        return None

    def _run(self, point: LoadPoint, pid: str, run: int) -> PointOutcome:
        search = self.plan.search
        tag = {"id": self.search_id, "over": search.over, "slo": search.describe(), "run": run}
        return self.plan.run_probe(point, pid, self._folder(run), tag)

    def settle(self, level: float) -> PointOutcome:
        """The level's point: its one run, or its runs combined (median run + spread)."""
        runs = self.runs[level]
        # the point is the run the probe's verdict is (not the median throughput run)
        keep = verdict_run(self.verdicts.get(level, []))
        final = runs[0] if len(runs) == 1 else combine(runs, self.plan.output_dir, keep)
        self.finals[level] = final
        if self.on_point is not None:
            self.on_point(final)
        return final


def _keep_first_run(output_dir: Path, pid: str) -> None:
    """Before a probe's second run, its first moves to ``repeats/r1`` (combine picks one)."""
    dst = repeat_dir(output_dir, 1)
    dst.mkdir(parents=True, exist_ok=True)
    for suffix in (REQUESTS_SUFFIX, TELEMETRY_SUFFIX, ".json"):  # the result last
        src = output_dir / f"{pid}{suffix}"
        if src.is_file() and not (dst / src.name).exists():
            shutil.copyfile(src, dst / src.name)


def search_probes(
    plan: SearchPlan,
    *,
    on_point: Callable[[PointOutcome], None] | None = None,
    resume: bool = False,
    on_skip: Callable[[str], None] | None = None,
) -> SearchRun:
    """Run ``plan``'s search to its end; write the summary into its output folder."""
    search = plan.search
    search_id = search_id_for(plan.prefix, plan.workload, search)
    prober = _Prober(plan, search_id, resume, on_point, on_skip)
    try:
        outcome = search_capacity(
            _space(search),
            prober.measure,
            noise=search.noise,
            max_runs=search.max_runs,
            budget=Budget(max_runs=search.max_probes, max_seconds=search.max_seconds),
        )
    finally:  # every probe run so far is a point, even when the search was interrupted
        for level in [lv for lv in prober.runs if lv not in prober.finals]:
            prober.settle(level)
    finals = prober.finals
    at_capacity = finals[outcome.capacity].result.flat() if outcome.capacity in finals else {}
    summary = SearchSummary.build(
        outcome,
        ids=(search_id, plan.server_id),
        constraint=(search.over, search.slo),
        at_capacity=at_capacity,
        knee=find_knee(_figures(finals)),
        notes=prober.notes,
    )
    path = write_search_summary(plan.output_dir, summary) if plan.output_dir else None
    ran = [finals[p.level] for p in _distinct(outcome.probes) if p.level in finals]
    return SearchRun(summary, ran, path)


def _space(search: SearchConfig) -> SearchSpace:
    integer = search.over == "concurrency"
    return SearchSpace(
        start=search.first(),
        low=search.lowest(),
        high=search.highest(),
        integer=integer,
        tolerance=search.tolerance,
    )


def _distinct(probes: Any) -> list[Any]:
    seen: dict[float, Any] = {}
    for probe in probes:
        seen.setdefault(probe.level, probe)
    return list(seen.values())


def _figures(finals: dict[float, PointOutcome]) -> list[LevelFigures]:
    """Each ok level's throughput and mean latency, for the knee."""
    out = []
    for level, outcome in finals.items():
        if outcome.result.status != "ok":
            continue
        flat = outcome.result.flat()
        tput, lat = flat.get("output_throughput"), flat.get("mean_e2el_ms")
        if isinstance(tput, (int, float)) and isinstance(lat, (int, float)):
            out.append(LevelFigures(level, float(tput), float(lat)))
    return out
