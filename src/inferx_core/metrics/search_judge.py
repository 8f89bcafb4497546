"""One point judged as the level it was run at, from its result and request records.

:func:`judge_point` is the one verdict of the search, ``inferx report --slo``, the
buyer's table and imported points (docs/search.md, "how a claim is made"):

1. a failed point whose requests were all refused or reset says nothing about load
   (the server stopped answering): not judged, with that reason;
2. every answered request is checked against what was asked
   (:func:`~inferx_core.metrics.requests.judged_request`, the point summary's own):
   a reply cut short counts as a failed request, so a server that sheds load fails
   the level where it sheds;
3. the SLO verdict (:func:`~inferx_core.metrics.search_verdict.judge_run`): a point
   invalid for the server's doing, or one where nothing completed, is a fail;
4. a pass counts only where the level was held
   (:func:`~inferx_core.metrics.search_held.not_held`); a fail needs no such proof
   (a server that fails below the level fails at it);
5. open loop: a backlog that grows through the run is a fail (the rate is not
   sustained), and a run shorter than the search asked is uncertain.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from inferx_core.config.search import SearchConfig
from inferx_core.config.slo import SloTarget
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.requests import RequestMetrics, judged_request
from inferx_core.metrics.search import Measurement
from inferx_core.metrics.search_held import Reached, not_held, reached
from inferx_core.metrics.search_verdict import judge_run

__all__ = ["Level", "judge_point", "judged_requests"]

#: A rate run is too short to tell when its sends span less than this share of the
#: duration the search asked (a Poisson draw's own span is rarely that much shorter).
MIN_SPAN_SHARE = 0.8


@dataclasses.dataclass(frozen=True)
class Level:
    """The level a point was run as: its axis, value and the run time a rate needs."""

    over: str  # concurrency | rate
    value: float
    min_seconds: float | None = None  # rate: how long the search asked it to run


def judged_requests(records: Sequence[RequestRecord], ignore_eos: bool) -> list[RequestMetrics]:
    """The measured requests' metrics; a reply cut short of what was asked is a failure."""
    return [judged_request(rec, ignore_eos) for rec in records]


def _ignore_eos(flat: Mapping[str, object]) -> bool:
    """Whether the point's requests asked for every token (its workload's ``ignore_eos``)."""
    workload = flat.get("workload")
    if isinstance(workload, Mapping) and workload.get("ignore_eos") is True:
        return True
    return flat.get("ignore_eos") is True


def _when(rec: RequestRecord) -> int:
    return rec.send_ns or rec.end_ns


def _server_gone(records: Sequence[RequestRecord]) -> str | None:
    """Why the run says nothing about load: from its first refused or reset connection
    on, nothing succeeded (the server went away during the run or before it)."""
    # a connect refused never sent (send_ns 0): its time is when it failed (end_ns)
    ordered = sorted((r for r in records if r.send_ns or r.end_ns), key=_when)
    first = next((i for i, r in enumerate(ordered) if r.error_kind == "connection"), None)
    if first is None or any(r.ok for r in ordered[first:]):
        return None  # a reset now and then is the server's answer to the load
    why = ordered[first].error or "connection refused"
    return (
        f"the server stopped answering: request {ordered[first].request_id} and every one "
        f"after it failed to connect ({why})"
    )


def _open_loop(verdict: Measurement, got: Reached | None, level: Level) -> Measurement:
    if got is not None and got.backlog_grows:
        why = (
            f"backlog (in flight {got.backlog_middle:.1f} -> {got.backlog_last:.1f} from the "
            "middle to the last third: the rate is not sustained)"
        )
        return dataclasses.replace(verdict, score=max(verdict.score or 0.0, math.inf), binding=why)
    want = level.min_seconds
    sends = got.requests if got is not None else 0
    span = (sends - 1) / got.achieved_rate if got and got.achieved_rate else 0.0
    if want is not None and span < MIN_SPAN_SHARE * want:
        note = f"a {span:.1f} s run at r{level.value:g}, shorter than the {want:.1f} s asked"
        return dataclasses.replace(verdict, note=note)
    return verdict


def _with_min_seconds(level: Level | None, target: SloTarget) -> Level | None:
    """A rate level without the run time it needs (a sweep point, an import: no search
    sized it) gets the one the search would have asked for ``target``, so every judge
    marks a run too short to tell as uncertain (a 0.9 s run at 34 req/s never builds the
    queue a 20 s one does)."""
    if level is None or level.over != "rate" or level.min_seconds is not None:
        return level
    if not math.isfinite(level.value) or level.value <= 0:
        return level
    try:
        seconds = SearchConfig(over="rate", slo=target).probe_seconds(level.value)
    except ValueError:  # a target the search cannot hold (no latency limit to size it by)
        return level
    return dataclasses.replace(level, min_seconds=seconds)


def judge_point(
    status: str,
    failure_reason: str | None,
    flat: Mapping[str, object],
    records: Sequence[RequestRecord] | None,
    target: SloTarget,
    *,
    point_id: str | None = None,
    level: Level | None = None,
) -> Measurement:
    """The point's verdict against ``target`` (``records``: its request sidecar, None
    when there is none, e.g. an imported point; ``level``: what it was run as)."""
    measured = None if records is None else [r for r in records if not r.warmup]
    if measured is not None and status != "ok" and (gone := _server_gone(measured)):
        return Measurement(None, reason=gone, point_id=point_id)
    ignore_eos = _ignore_eos(flat)
    level = _with_min_seconds(level, target)
    requests = None if measured is None else judged_requests(measured, ignore_eos)
    verdict = judge_run(status, failure_reason, flat, requests, target, point_id)
    if verdict.score is None or not measured or level is None:
        return verdict  # no records (an import, a file without its sidecar): no level to read
    got = reached(measured)
    seen = got.pairs() if got is not None else None
    if verdict.score <= 1 and (why := not_held(got, level.over, level.value)):
        return Measurement(None, reason=why, point_id=point_id, reached=seen)
    judged = _open_loop(verdict, got, level) if level.over == "rate" else verdict
    return dataclasses.replace(judged, reached=seen)
