"""One probe's run, sized to its level, and its files checked before ``--resume`` reuses them.

:func:`sized_plan`: a probe holds its level only with enough prompts
(:meth:`~inferx_core.config.search.SearchConfig.probe_prompts`: 4 per slot, or a
rate's minimum duration of arrivals); the server's plan is run with that many.

:func:`reusable_probe`: a complete probe file is reused only when it is this
probe's: the point id and load level inside the result, and the request sidecar
present, readable and agreeing with the result's counts
(:func:`~inferx_core.results.read.sidecar_mismatch`). A file that disagrees (torn,
another level's copied over it) is run again, and the search says why.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from inferx_core.config.bounds import MAX_SEED
from inferx_core.config.points import LoadPoint
from inferx_core.config.search import SearchConfig
from inferx_core.pipeline.point.measure import PointOutcome
from inferx_core.pipeline.point.requests import prompts_for
from inferx_core.pipeline.point.server_plan import ServerPlan
from inferx_core.results.files import is_complete, result_path
from inferx_core.results.model import PointResultBase, parse_result
from inferx_core.results.read import read_json, read_request_records, sidecar_mismatch

__all__ = ["probe_level", "reusable_probe", "sized_plan"]


def probe_level(point: LoadPoint) -> float:
    """The level a probe point is run at (its concurrency or its rate)."""
    if point.concurrency is not None:
        return float(point.concurrency)
    return float(point.request_rate if point.request_rate is not None else math.nan)


#: A probe's k-th run draws with seed + (k - 1) * this (a prime stride: no two runs of
#: one search share a draw).
RERUN_SEED_STRIDE = 1_000_003


def sized_plan(
    plan: ServerPlan, search: SearchConfig, point: LoadPoint, run: int = 1
) -> ServerPlan:
    """``plan`` with as many measured prompts as the probe at ``point`` needs to hold it;
    its ``run``-th run (a rerun near the limit) re-seeded, so that a rerun is a fresh
    draw of the arrivals and prompts rather than the same schedule played again (a
    seeded Poisson draw that fell short of its level would fall short every time)."""
    usual = prompts_for(point, plan.load)
    wanted = search.probe_prompts(probe_level(point), usual)
    if run > 1:
        seed = (plan.workload.seed + (run - 1) * RERUN_SEED_STRIDE) % (MAX_SEED + 1)
        plan = replace(plan, workload=plan.workload.model_copy(update={"seed": seed}))
    if wanted == usual:
        return plan
    return replace(plan, load=plan.load.model_copy(update={"num_prompts": wanted}))


def _level_of(result: PointResultBase) -> float | None:
    ident = result.identity
    if ident.mode == "closed" and ident.concurrency is not None:
        return float(ident.concurrency)
    return ident.request_rate if ident.mode == "open" else None


def _disagreement(path: Path, pid: str, level: float) -> tuple[PointOutcome | None, str]:
    """The probe file at ``path`` as an outcome, or what in it is not this probe's."""
    try:
        result = parse_result(read_json(path))
        records = read_request_records(path)
    except (OSError, ValueError) as exc:  # a torn or foreign file
        return None, f"it cannot be read ({str(exc).splitlines()[0][:120]})"
    if result.point_id != pid:
        return None, f"it holds point {result.point_id}"
    got = _level_of(result)
    if got is None or not math.isclose(got, level):
        return None, f"it was run at level {got if got is None else f'{got:g}'}, not {level:g}"
    if records is None:
        return None, "its request sidecar is missing"
    mismatch = sidecar_mismatch(result, records)
    if mismatch is not None:
        return None, f"its request sidecar disagrees with it ({mismatch})"
    return PointOutcome(pid, result, records, path), ""


def reusable_probe(folder: Path, pid: str, level: float) -> tuple[PointOutcome | None, str | None]:
    """(the probe's complete run in ``folder``, None) to reuse; (None, why) when a file
    is there but is not this probe's; (None, None) when there is nothing to reuse."""
    if not (folder / f"{pid}.json").is_file() or not is_complete(folder, pid):
        return None, None
    path = result_path(folder, pid)
    outcome, why = _disagreement(path, pid, level)
    if outcome is not None:
        return outcome, None
    return None, f"{path}: not reused, run again: {why}"
