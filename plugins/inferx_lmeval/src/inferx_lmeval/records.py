"""lm-eval's results (as the worker writes them) to AccuracyRecords."""

from __future__ import annotations

from typing import Any

from inferx_core import AccuracyRecord

__all__ = ["records_from_output"]

_NOT_METRICS = {"alias", "name", "sample_len", " ", "samples"}


def _metric_keys(entry: dict[str, Any]) -> list[str]:
    """``metric,filter`` keys of one result entry, in lm-eval's order (stderr left out)."""
    keys = []
    for key, value in entry.items():
        metric = key.split(",", 1)[0]
        if key in _NOT_METRICS or metric.endswith("_stderr") or not isinstance(value, float | int):
            continue
        if isinstance(value, bool):
            continue
        keys.append(key)
    return keys


def _stderr(entry: dict[str, Any], key: str) -> float | None:
    metric, _, filt = key.partition(",")
    value = entry.get(f"{metric}_stderr,{filt}" if filt else f"{metric}_stderr")
    return float(value) if isinstance(value, float | int) and value >= 0 else None


def _samples(output: dict[str, Any], name: str) -> int:
    """Samples scored for a task; for a group, the sum over its tasks."""
    counts = output.get("n-samples") or {}
    if name in counts:
        return int(counts[name].get("effective", counts[name].get("original", 0)))
    return sum(int(c.get("effective", 0)) for c in counts.values())


def records_from_output(
    output: dict[str, Any], *, evaluator: str, limit: int | None
) -> list[AccuracyRecord]:
    """One record per metric and filter of every result entry (tasks and groups).

    The headline (``primary``) is the first metric of the requested task's own
    entry (GSM8K: ``exact_match,strict-match``), else of the first entry.
    """
    entries: dict[str, dict[str, Any]] = {**output.get("results", {}), **output.get("groups", {})}
    requested = output.get("task_name")
    head_task = requested if requested in entries else next(iter(entries), None)
    version = output.get("lm_eval_version")
    records: list[AccuracyRecord] = []
    for name, entry in entries.items():
        better = (output.get("higher_is_better") or {}).get(name, {})
        shots = (output.get("n-shot") or {}).get(name)
        for index, key in enumerate(_metric_keys(entry)):
            metric = key.split(",", 1)[0]
            records.append(
                AccuracyRecord(
                    task=name,
                    metric=key,
                    value=float(entry[key]),
                    stderr=_stderr(entry, key),
                    samples=_samples(output, name),
                    num_fewshot=int(shots) if isinstance(shots, int | float) else None,
                    limit=limit,
                    higher_is_better=better.get(metric) is not False,
                    primary=name == head_task and index == 0,
                    evaluator=evaluator,
                    evaluator_version=version,
                    seconds=output.get("seconds"),
                )
            )
    if not records:
        raise RuntimeError(f"lm-eval reported no metric for {requested!r}")
    return records
