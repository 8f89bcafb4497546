"""Accuracy of two results compared with its standard error (``inferx compare``).

For each task both points were evaluated on, the headline figures A and B
differ by ``diff = B - A`` with standard error ``sqrt(se_A^2 + se_B^2)``
(independent samples). The verdict is "better" or "worse" only when
``|diff| > 1.96 x that`` (a 95% two-sided test; a zero standard error, all
answers right or all wrong on both sides, counts any difference), otherwise
"same"; "n/a" when a side has no standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from inferx_core.results.model import PointResultBase

__all__ = ["Z95", "accuracy_verdict", "compare_accuracy", "compare_pairs"]

Z95 = 1.959963984540054


def accuracy_verdict(
    a: float, a_se: float | None, b: float, b_se: float | None, higher_is_better: bool = True
) -> dict[str, Any]:
    """``diff`` (B - A), its standard error, ``z`` and the verdict for B against A."""
    diff = b - a
    if a_se is None or b_se is None:
        return {
            "diff": diff,
            "diff_stderr": None,
            "z": None,
            "verdict": "n/a",
            "basis": "no stderr",
        }
    se = math.sqrt(a_se**2 + b_se**2)
    z = diff / se if se > 0 else None
    significant = abs(z) > Z95 if z is not None else diff != 0
    basis = "zero stderr" if z is None else ("|z| > 1.96" if significant else "|z| <= 1.96")
    if not significant:
        return {"diff": diff, "diff_stderr": se, "z": z, "verdict": "same", "basis": basis}
    gain = diff if higher_is_better else -diff
    verdict = "better" if gain > 0 else "worse"
    return {"diff": diff, "diff_stderr": se, "z": z, "verdict": verdict, "basis": basis}


def compare_accuracy(
    label: str, a: PointResultBase | None, b: PointResultBase | None
) -> list[dict[str, Any]]:
    """One comparison per task evaluated on both points (their headline figures)."""
    sa = a.accuracy if a is not None else None
    sb = b.accuracy if b is not None else None
    if sa is None or sb is None:
        return []
    out = []
    for ta in sa.tasks:
        tb = sb.task(ta.task)
        if tb is None or ta.value is None or tb.value is None or ta.metric != tb.metric:
            continue
        head = ta.headline
        better = head.higher_is_better if head is not None else True
        verdict = accuracy_verdict(ta.value, ta.stderr, tb.value, tb.stderr, better)
        row: dict[str, Any] = {"label": label, "task": ta.task, "metric": ta.metric}
        row |= {"a": ta.value, "a_stderr": ta.stderr, "b": tb.value, "b_stderr": tb.stderr}
        row |= verdict
        row["summary"] = f"{label}: accuracy {ta.task} {ta.value:.4f} -> {tb.value:.4f}"
        out.append(row)
    return out


def compare_pairs(
    pairs: Iterable[tuple[str, str, str]],
    result_a: Callable[[str], PointResultBase | None],
    result_b: Callable[[str], PointResultBase | None],
) -> list[dict[str, Any]]:
    """:func:`compare_accuracy` over matched points ``(label, point in A, point in B)``."""
    return [
        row
        for label, pa, pb in pairs
        for row in compare_accuracy(label, result_a(pa), result_b(pb))
    ]
