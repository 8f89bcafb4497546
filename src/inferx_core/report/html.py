"""One self-contained HTML page: plots as base64 PNGs, tables, notes. No network needed.

Nothing is fetched when the page opens: no external CSS, fonts or scripts.
A few lines of inline script mark every image that decoded
(``data-decoded="1"``) and count them on ``<body data-images-decoded="N/M">``,
so a headless browser can check the page really rendered its plots.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inferx_core.report.accuracy import accuracy_html
from inferx_core.results.files import utc_now, write_text_atomic
from inferx_core.tables.buyer import search_table_html
from inferx_core.tables.points import layer_lines, summary_cells, summary_columns

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px;
       color: #222; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.meta { color: #555; font-size: 13px; }
.notes li { font-size: 13px; margin: 2px 0; }
.warn { color: #a15c00; }
figure { margin: 12px 0 20px 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
table.points { border-collapse: collapse; font-size: 12px; }
table.points th, table.points td { border: 1px solid #ddd; padding: 3px 6px; white-space: nowrap; }
table.points th { background: #f3f3f3; position: sticky; top: 0; }
table.points td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.search { border-collapse: collapse; font-size: 12px; }
table.search th, table.search td { border: 1px solid #ddd; padding: 3px 6px; }
table.search th { background: #f3f3f3; }
tr.failed td { color: #b00020; }
tr.pareto td { font-weight: 600; }
.scroll { overflow-x: auto; }
"""

_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    var good = imgs[i].complete && imgs[i].naturalWidth > 0;
    imgs[i].setAttribute('data-decoded', good ? '1' : '0');
    if (good) { ok++; }
  }
  document.body.setAttribute('data-images-decoded', ok + '/' + imgs.length);
});
"""


@dataclass
class Figure:
    """A PNG to embed, with its caption."""

    path: Path
    caption: str
    anchor: str = ""


@dataclass
class PageContent:
    title: str
    sources: list[str]
    rows: Sequence[Mapping[str, Any]]
    figures: list[Figure] = field(default_factory=list)
    timelines: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    csv_name: str | None = None
    accuracy: Sequence[Mapping[str, Any]] = ()  # report.accuracy.accuracy_rows
    search: Sequence[Mapping[str, Any]] = ()  # analysis.buyer.search_rows: the buyer's table


def _img(fig: Figure) -> str:
    data = base64.b64encode(fig.path.read_bytes()).decode("ascii")
    alt = html.escape(fig.caption, quote=True)
    anchor = f' id="{html.escape(fig.anchor, quote=True)}"' if fig.anchor else ""
    return (
        f'<figure{anchor}><img alt="{alt}" src="data:image/png;base64,{data}">'
        f"<figcaption>{html.escape(fig.caption)}</figcaption></figure>"
    )


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    columns = summary_columns(rows)
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in columns)
    body = []
    for row, cells in zip(rows, summary_cells(rows), strict=True):
        cls = "failed" if row.get("status") != "ok" else ("pareto" if row.get("on_pareto") else "")
        tds = []
        for (_, _, fmt), text in zip(columns, cells, strict=True):
            attr = ' class="num"' if fmt not in ("s", "pareto") else ""
            tds.append(f"<td{attr}>{html.escape(text)}</td>")
        pid = html.escape(str(row.get("point_id")), quote=True)
        klass = f' class="{cls}"' if cls else ""
        body.append(f'<tr{klass} data-point="{pid}">{"".join(tds)}</tr>')
    return (
        '<div class="scroll"><table class="points" id="points"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></div>"
    )


def _accuracy_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    if not rows:
        return []
    return [
        '<h2 id="accuracy-heading">Accuracy</h2>',
        '<p class="meta">Measured on the same server after its load points, at the points '
        "named by <code>evals.at</code>: each task's headline figure ± its standard error; "
        "red: under its threshold, or the eval failed. Every figure: "
        '<a href="accuracy.csv">accuracy.csv</a>.</p>',
        accuracy_html(rows),
    ]


def _layers_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per series, the layer of the TTFT that moved from one load point to the next."""
    lines = layer_lines(rows)
    if not lines:
        return []
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return [
        '<h2 id="ttft-layers">Where the TTFT went</h2>',
        "<p class=\"meta\">The engine's own clock beside the client's: for each load point, "
        "the layer of the median TTFT (the server's queue, its prefill, or the client-side "
        "rest: the client, the wire and the server's front end) that moved most from the "
        "previous load point of its series.</p>",
        f'<ul class="notes" id="ttft-layer-steps">{items}</ul>',
    ]


def render(content: PageContent) -> str:
    """The page as one string."""
    ok = sum(1 for r in content.rows if r.get("status") == "ok")
    now = utc_now()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(content.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(content.title)}</h1>",
        f'<p class="meta">{len(content.rows)} point(s), {ok} ok; generated {now} from '
        + ", ".join(f"<code>{html.escape(s)}</code>" for s in content.sources)
        + (
            f'; all points as CSV: <a href="{html.escape(content.csv_name, quote=True)}">'
            f"{html.escape(content.csv_name)}</a>"
            if content.csv_name
            else ""
        )
        + "</p>",
    ]
    if content.notes or content.warnings:
        items = [f'<li class="warn">{html.escape(w)}</li>' for w in content.warnings]
        items += [f"<li>{html.escape(n)}</li>" for n in content.notes]
        parts.append(f'<ul class="notes">{"".join(items)}</ul>')
    if content.search:  # the answer first: capacity at SLO per server configuration
        parts.append(search_table_html(content.search))
    if content.figures:
        parts.append("<h2>Plots</h2>")
        parts.append(_img(content.figures[0]))  # the Pareto chart, accuracy beside it
    parts.extend(_accuracy_section(content.accuracy))
    parts.extend(_img(f) for f in content.figures[1:])
    parts.append("<h2>All points</h2>")
    parts.append(
        '<p class="meta">Bold: on its group\'s Pareto frontier (tok/s/gpu vs tok/s/user; '
        "Pareto column: grp = own group, all = every group); GPUs * = assumed; red: failed. "
        "Cost from $/GPU/hour; tok/s/MW provisioned from all-in kW per GPU, measured from "
        "GPU chip power where valid.</p>"
    )
    parts.append(_table(content.rows))
    parts.extend(_layers_section(content.rows))
    if content.timelines:
        parts.append("<h2>Telemetry timelines</h2>")
        parts.extend(_img(f) for f in content.timelines)
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts) + "\n"


def write_html(content: PageContent, path: Path) -> Path:
    return write_text_atomic(path, render(content))
