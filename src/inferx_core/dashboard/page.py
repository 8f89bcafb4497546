"""``inferx dashboard``: one self-contained HTML page, and a local server for it.

The page holds everything it needs: plotly.js (from the ``plotly`` Python
package, which ships ``plotly.min.js``), the dashboard's script
(``dashboard.js`` beside this module) and the points as JSON. It makes no
network request, so it opens offline and can be mailed or archived.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from inferx_core.analysis.cost import USD_PER_GPU_HOUR
from inferx_core.dashboard.data import columnar, points_from_db, points_from_paths
from inferx_core.results.files import write_text_atomic

__all__ = ["dashboard_points", "render_page", "script_json", "serve", "write_dashboard"]

_FILTERS = (
    ("hardware", "hardware"),
    ("engine", "engine"),
    ("version", "engine version"),
    ("model", "model"),
    ("precision", "precision"),
    ("scenario", "ISL/OSL"),
    ("label", "label"),
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 1.5em 2em; color: #222; }
header { display: flex; flex-wrap: wrap; gap: .6em 1.2em; align-items: end; padding: .8em 0;
         position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ddd; z-index: 5; }
label { display: flex; flex-direction: column; font-size: 12px; color: #555; }
select, input { font-size: 13px; padding: 2px 4px; }
#summary { font-size: 13px; margin: .6em 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 1em; }
.chart { height: 460px; border: 1px solid #eee; }
table { border-collapse: collapse; font-size: 12px; margin-top: .5em; }
td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: left; }
h2 { font-size: 16px; margin-top: 1.4em; }
.missing { padding: 1em 1.5em; font-size: 14px; color: #444; background: #fafafa; }
"""


def dashboard_points(
    db_url: str | None = None, paths: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The points of result folders when given, else of the database."""
    if paths:
        return points_from_paths(paths)
    return points_from_db(db_url)


def _filters_html() -> str:
    parts = []
    for name, text in _FILTERS:
        parts.append(
            f'<label>{text}<select id="f-{name}" class="filter">'
            '<option value="">(all)</option></select></label>'
        )
    parts.append('<label>from<input type="date" id="f-since" class="filter"></label>')
    parts.append('<label>to<input type="date" id="f-until" class="filter"></label>')
    parts.append(
        '<label>not ok points<input type="checkbox" id="f-invalid" class="filter" checked></label>'
    )
    parts.append(
        "<label>$/GPU/hr (empty: each point's own price)"
        '<input type="number" id="price" min="0" step="0.01" placeholder="e.g. 2.50"></label>'
    )
    return "\n".join(parts)


def _history_html() -> str:
    metrics = (
        ("tput_per_gpu", "tok/s/GPU"),
        ("median_intvty", "tok/s/user"),
        ("median_e2el_ms", "E2E p50 ms"),
        ("median_ttft_ms", "TTFT p50 ms"),
        ("median_ttfo_ms", "TTFO p50 ms (reasoning)"),
        ("spec_mean_acceptance_length", "spec. acceptance length"),
        ("cost", "$/M tokens"),
    )
    options = "".join(f'<option value="{v}">{t}</option>' for v, t in metrics)
    return (
        '<h2>History per configuration</h2><div class="controls">'
        '<label>configuration (point id)<select id="history-config"></select></label>'
        f'<label>metric<select id="history-metric">{options}</select></label></div>'
        '<div id="chart-history" class="chart"></div>'
    )


def _script_text(text: str) -> str:
    """Code (plotly.js, ours) safe inside <script>: no ``</script`` can end it early
    (``<\\/`` means ``</`` inside JS strings and regexes, where alone such text occurs)."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)


#: What a JSON text must not hold inside <script>: ``<`` (``</script>`` ends the element,
#: ``<!--`` followed by ``<script`` makes the parser swallow the rest of the page), ``>``
#: and ``&`` for good measure, and the two line separators old JS parsers took for line ends.
#: They can only occur inside JSON strings, where the ``\\uXXXX`` form means the same.
_SCRIPT_UNSAFE: dict[str, str | int | None] = {c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"}


def script_json(value: Any) -> str:
    """``value`` as JSON that is inert inside a <script> element, whatever its strings hold."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    return text.translate(str.maketrans(_SCRIPT_UNSAFE))


def _cost_missing_html() -> str:
    """Shown instead of the cost chart when no point shown has a price (dashboard.js)."""
    types = ", ".join(USD_PER_GPU_HOUR)
    return (
        '<div id="cost-missing" class="chart missing" hidden><p><b>Cost vs interactivity: '
        "no price per GPU-hour is known</b> for the points shown, so there is no $/M tokens "
        "to draw.</p><p>Type one in <i>$/GPU/hr</i> above, or give it in the config the "
        "points are run with: <code>cost.usd_per_gpu_hour</code>, or <code>cost.gpu_type</code>"
        f" ({html.escape(types)}) for the built-in price table.</p>"
        '<p class="why"></p></div>'
    )


def render_page(points: Sequence[dict[str, Any]], title: str = "InferX dashboard") -> str:
    """The whole page as one string."""
    from plotly.offline import get_plotlyjs

    script = resources.files("inferx_core.dashboard").joinpath("dashboard.js").read_text("utf-8")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title><style>{_STYLE}</style>
<script>{_script_text(get_plotlyjs())}</script>
</head><body>
<header><h1 style="font-size:18px;margin:0 1em 0 0">{html.escape(title)}</h1>
{_filters_html()}</header>
<div id="summary"></div>
<div class="charts">
<div id="chart-pareto" class="chart"></div>
<div id="chart-latency" class="chart"></div>
<div id="chart-cost" class="chart"></div>
{_cost_missing_html()}
</div>
<h2>Pareto points by cost</h2>
<table id="cost-table"><thead><tr><th>point</th><th>group</th><th>tok/s/GPU</th>
<th>tok/s/user</th><th>$/GPU/hr</th><th>$/M tokens</th></tr></thead><tbody id="cost-rows">
</tbody></table>
{_history_html()}
<h2>Points not ok</h2>
<table><thead><tr><th>point</th><th>status</th><th>reason</th><th>date</th></tr></thead>
<tbody id="invalid-rows"></tbody></table>
<script type="application/json" id="inferx-data">{script_json(columnar(points))}</script>
<script>{_script_text(script)}</script>
</body></html>
"""


def write_dashboard(
    points: Sequence[dict[str, Any]], output: Path, title: str = "InferX dashboard"
) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(output, render_page(points, title))


def serve(page: Path, port: int = 8765) -> None:  # pragma: no cover - interactive
    """Serve the page (and nothing else of its folder) on 127.0.0.1 until Ctrl-C."""
    import http.server

    body = page.read_bytes()

    class PageHandler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] not in ("/", f"/{page.name}"):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with http.server.ThreadingHTTPServer(("127.0.0.1", port), PageHandler) as httpd:
        print(f"serving http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)", flush=True)
        httpd.serve_forever()
