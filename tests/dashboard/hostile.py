"""Result data that tries to be markup: a value for every field that reaches a page, each
a script-running or page-breaking payload with the field's name after it, so a test can
find each one, as text, where the page shows that field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from result_factory import make_result

#: Each runs script (sets window.__pwned) or breaks the page if it is ever taken as markup.
PAYLOADS = (
    '<img src=x onerror="window.__pwned=1">',
    "</script><script>window.__pwned=2</script>",
    '"><svg onload="window.__pwned=3">',
    "<!--<script>",  # inside <script>: the parser would swallow the rest of the page
    "&lt;b&gt;&amp;<b>4</b>",  # entities must stay as typed, not decode
    '\'><iframe srcdoc="<script>parent.__pwned=5</script>">',
    "$\\nosuchcmd$ at $2 and $3",  # matplotlib mathtext: a parse error, or italics sans $
)

#: The fields of a result that a page shows, one hostile value each (the model gets a
#: payload without "/": pages show the part of a model id after the last "/").
FIELDS = ("point", "failed", "hardware", "model", "version", "engine", "precision", "name", "hw")


def hostile(field: str) -> str:
    """The hostile value of ``field``: a payload, then the field's name to find it by."""
    return PAYLOADS[FIELDS.index(field) % len(PAYLOADS)] + field


#: A folder name (a label in ``inferx dashboard DIR``): anything but "/".
LABEL = '<img src=x onerror="window.__pwned=6">label'


def _write(folder: Path, name: str, data: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data, indent=2))


def hostile_results(folder: Path) -> Path:
    """Two ok points and a failed one, every shown field hostile, plus an InferenceX aggregate
    whose identity fields (``hw``, ``framework``, ``model``, ``precision``) are hostile."""
    common: dict[str, Any] = {
        "engine": hostile("engine"),
        "model": hostile("model"),
        "dtype": hostile("precision"),
        "name": hostile("name"),
        "gpu_name": hostile("hardware"),
        "cost": {"gpu_type": hostile("hardware"), "tier": "owner", "usd_per_gpu_hour": 2.0},
    }
    points = [
        make_result(hostile("point"), concurrency=4, **common),
        make_result("plain-c16", concurrency=16, tput_per_gpu=1500.0, median_intvty=30.0, **common),
        make_result("bad-c64", status="failed", tput_per_gpu=None, median_intvty=None, **common),
    ]
    points[2]["failure_reason"] = hostile("failed")
    for i, point in enumerate(points):
        point["engine"]["version"] = hostile("version")
        _write(folder, f"point{i}.json", point)
    aggregate = {
        "hw": hostile("hw"),
        "framework": hostile("engine"),
        "model": hostile("model"),
        "precision": hostile("precision"),
        "conc": 8,
        "tp": 1,
        "isl": 1024,
        "osl": 1024,
        "tput_per_gpu": 900.0,
        "output_tput_per_gpu": 450.0,
        "input_tput_per_gpu": 450.0,
        "median_intvty": 40.0,
        "median_ttft": 0.1,
        "median_tpot": 0.025,
        "median_e2el": 2.0,
    }
    _write(folder, "agg_hostile.json", aggregate)
    return folder
