"""Which layer of the TTFT moved between two runs of one point: queue, prefill, decode or client.

Each side's anatomy (:mod:`inferx_core.metrics.anatomy`) gives the medians of
the server's queue time, the server's TTFT (prefill and the first decode
step), the client-side rest (the client, the wire and the server's front end)
and the server's decode time per token. The client's TTFT change is the sum
of the first three changes (up to the medians' own arithmetic); the layer
named is the one whose median moved most in milliseconds. Decode is reported
beside it (a per-token time, not a part of the TTFT) when it moved by more
than the noise floor.

In a report of many points (:func:`layer_steps`) the two runs are adjacent load
points of one series (the same server configuration and scenario, one load
mode, in load order): each point names the layer that moved from the point
before it, so a sweep reads as where its TTFT went as the load grew. A point
whose neighbour, or itself, has no anatomy gets no step (nothing to name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferx_core.metrics.anatomy import LAYERS, Anatomy

__all__ = ["STEP_FIELDS", "TTFT_LAYERS", "layer_moved", "layer_steps"]

#: The layers whose sum is the client's TTFT.
TTFT_LAYERS = ("queue", "prefill", "client")


def _parts(a: Anatomy, b: Anatomy) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for layer, figure in LAYERS.items():
        va, vb = a.median(figure), b.median(figure)
        change = vb - va if va is not None and vb is not None else None
        out[layer] = {"a": va, "b": vb, "change_ms": change}
    return out


def _decode_note(decode: dict[str, float | None], noise: float) -> str:
    va, vb = decode["a"], decode["b"]
    if va is None or vb is None or va <= 0 or abs(vb / va - 1) <= noise:
        return ""
    return f"; the server's decode per token {va:.2f} -> {vb:.2f} ms ({vb / va - 1:+.0%})"


def layer_moved(a: Anatomy | None, b: Anatomy | None, noise: float = 0.05) -> dict[str, Any] | None:
    """The layer that moved most from ``a`` to ``b`` (medians), with every layer's change;
    None when either side has no anatomy (its engine reported no per-request timing)."""
    if a is None or b is None or not a.requests or not b.requests:
        return None
    parts = _parts(a, b)
    ta, tb = a.client_ttft_ms.median, b.client_ttft_ms.median
    assert ta is not None and tb is not None  # requests > 0
    moved = [
        (abs(c), layer) for layer in TTFT_LAYERS if (c := parts[layer]["change_ms"]) is not None
    ]
    layer = max(moved)[1] if moved else None
    within = abs(tb - ta) <= noise * ta
    if layer is None or within:
        summary = f"TTFT median {ta:.2f} -> {tb:.2f} ms: no layer moved beyond the noise floor"
        layer = None if within else layer
    else:
        change = parts[layer]["change_ms"]
        holds_queue = a.rest_includes_queue or b.rest_includes_queue
        queue_note = " (its rest holds the queue)" if layer == "client" and holds_queue else ""
        summary = (
            f"TTFT median {ta:.2f} -> {tb:.2f} ms ({tb - ta:+.2f}): the {layer} layer moved "
            f"most ({change:+.2f} ms){queue_note}"
        )
    summary += _decode_note(parts["decode"], noise)
    return {"layer": layer, "ttft_change_ms": tb - ta, "parts": parts, "summary": summary}


#: The row fields :func:`layer_steps` fills (``tables.columns``, source ``layers``).
STEP_FIELDS = ("ttft_layer_from", "ttft_layer", "ttft_layer_change_ms", "ttft_layer_summary")


def _same_series(prev: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    return prev.get("series") == row.get("series") and prev.get("mode") == row.get("mode")


def layer_steps(
    rows: Sequence[dict[str, Any]],
    anatomies: Mapping[str, Anatomy | None],
    noise: float = 0.05,
) -> None:
    """Fill :data:`STEP_FIELDS` on ``rows`` (sorted by series, then load): each row's layer
    that moved from the previous load point of its series (``ttft_layer`` None when no
    layer moved beyond the noise floor); every field None where there is no step."""
    prev: Mapping[str, Any] | None = None
    for row in rows:
        row.update(dict.fromkeys(STEP_FIELDS))
        if prev is not None and _same_series(prev, row):
            moved = layer_moved(
                anatomies.get(prev["point_id"]), anatomies.get(row["point_id"]), noise
            )
            if moved is not None:
                layer = moved["layer"]
                row["ttft_layer_from"] = prev["point_id"]
                row["ttft_layer"] = layer
                row["ttft_layer_change_ms"] = moved["parts"][layer]["change_ms"] if layer else None
                row["ttft_layer_summary"] = f"from {prev['point_id']}: {moved['summary']}"
        prev = row
