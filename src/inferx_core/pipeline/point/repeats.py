"""Run load points N times, interleaved, and stand each point by its median run.

Round k runs every point once (so slow drift, thermal or otherwise, hits all
points alike), writing into ``OUTPUT/repeats/r<k>/``, a folder result
readers skip. After the last round each point's result is its median run
(:func:`inferx_core.metrics.repeats.summarize_repeats`) with a ``repeats``
section, written with that run's sidecars to ``OUTPUT`` and passed to
``on_point``. With ``repeats == 1`` nothing changes: each point is written
where it always was.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from inferx_core.metrics.repeats import RepeatRun, summarize_repeats
from inferx_core.results.files import REQUESTS_SUFFIX, TELEMETRY_SUFFIX, write_result
from inferx_core.results.read import EXPORT_MARKER

P = TypeVar("P")
#: run one point: (point, its output folder) -> its outcome (PointOutcome)
RunOne = Callable[[P, "Path | None"], Any]


def repeat_dir(output_dir: Path, repeat: int) -> Path:
    root = output_dir / "repeats"
    root.mkdir(parents=True, exist_ok=True)
    marker = root / EXPORT_MARKER
    if not marker.exists():
        marker.write_text("single repeats; each point's median run is in the folder above\n")
    return root / f"r{repeat}"


def _copy_sidecars(src_dir: Path, dst_dir: Path, point_id: str) -> None:
    for suffix in (REQUESTS_SUFFIX, TELEMETRY_SUFFIX):
        src = src_dir / f"{point_id}{suffix}"
        if src.is_file():
            tmp = dst_dir / f".{point_id}{suffix}.tmp"
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst_dir / f"{point_id}{suffix}")


def combine(outcomes: Sequence[Any], output_dir: Path | None, chosen: int | None = None) -> Any:
    """One point's repeats as one outcome: the median run with the ``repeats`` section.

    ``chosen``: the index of the run to keep instead (a capacity search keeps the run
    whose score is its probe's verdict, so the point says what the search judged)."""
    runs = [
        RepeatRun(
            repeat=k + 1,
            status=o.result.status,
            date=o.result.identity.date,
            failure_reason=o.result.failure_reason,
        )
        for k, o in enumerate(outcomes)
    ]
    summary = summarize_repeats([o.result.flat() for o in outcomes], runs)
    if chosen is not None:
        summary = summary.model_copy(update={"chosen": runs[chosen].repeat})
    kept = outcomes[summary.chosen - 1]
    result = kept.result.model_copy(update={"repeats": summary})
    path = None
    if output_dir is not None and kept.path is not None:
        _copy_sidecars(kept.path.parent, output_dir, kept.point_id)
        path = write_result(output_dir, result)  # the result last: its sidecars are whole
    return dataclasses.replace(kept, result=result, path=path)


def run_repeated(
    points: Sequence[P],
    repeats: int,
    run_one: RunOne,
    output_dir: Path | None,
    on_point: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Every point ``repeats`` times, round by round; the combined outcomes in point order."""
    if repeats <= 1:
        outcomes = []
        for point in points:
            outcome = run_one(point, output_dir)
            outcomes.append(outcome)
            if on_point:
                on_point(outcome)
        return outcomes
    rounds: list[list[Any]] = [[] for _ in points]
    for k in range(1, repeats + 1):
        folder = repeat_dir(output_dir, k) if output_dir is not None else None
        for i, point in enumerate(points):
            rounds[i].append(run_one(point, folder))
    combined = []
    for outcomes in rounds:
        outcome = combine(outcomes, output_dir)
        combined.append(outcome)
        if on_point:
            on_point(outcome)
    return combined
