"""The buyer's table, shown: a terminal table and the report page's HTML table.

Its rows (one per server configuration, ranked by cost at SLO) are built above, in
:mod:`inferx_core.analysis.buyer`; this module only renders them.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SEARCH_COLUMNS", "search_table_html", "search_table_text"]

#: (header, row key, format)
SEARCH_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("search", "search_id", "{}"),
    ("source", "source", "{}"),
    ("SLO", "slo", "{}"),
    ("status", "status", "{}"),
    ("capacity", "capacity", "{:g}"),
    ("bound by", "binding_slo", "{}"),
    ("tok/s/GPU", "tput_per_gpu", "{:,.1f}"),
    ("goodput req/s", "request_goodput", "{:.3g}"),
    ("$/M tok", "cost_per_mtok_total", "{:.3f}"),
    ("tok/s/MW", "tok_s_per_mw_provisioned", "{:.3g}"),
    ("evidence", "evidence", "{}"),
    ("knee", "knee", "{}"),
)


def _cell(row: Mapping[str, Any], key: str, fmt: str) -> str:
    value = row.get(key)
    return "-" if value is None else fmt.format(value)


def search_table_text(rows: Sequence[dict[str, Any]], console: Any = None) -> None:
    """Print the rows as a terminal table (rich)."""
    import sys

    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=None if sys.stdout.isatty() else 220)
    table = Table(title="Capacity at SLO (cheapest first)")
    for header, _, _ in SEARCH_COLUMNS:
        table.add_column(header, overflow="fold")
    for row in rows:
        style = None if row["status"] == "found" else "yellow"
        table.add_row(*(_cell(row, k, f) for _, k, f in SEARCH_COLUMNS), style=style)
    console.print(table, markup=False)
    for row in rows:
        if row["status"] != "found":
            console.print(f"{row['search_id']}: {row['reason']}", markup=False)


def _html_row(row: Mapping[str, Any]) -> str:
    cells = "".join(f"<td>{html.escape(_cell(row, k, f))}</td>" for _, k, f in SEARCH_COLUMNS)
    name = html.escape(str(row["search_id"]), quote=True)
    return f'<tr data-search="{name}" data-source="{html.escape(str(row["source"]))}">{cells}</tr>'


def search_table_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as an HTML table; every value is escaped text, never markup."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _, _ in SEARCH_COLUMNS)
    body = "".join(_html_row(r) for r in rows)
    unfound = "".join(
        '<li class="warn">' + html.escape(f"{r['search_id']}: {r['reason']}") + "</li>"
        for r in rows
        if r["status"] != "found" and r.get("reason")
    )
    return (
        '<h2 id="search-heading">Capacity at SLO (cheapest first)</h2>'
        '<p class="meta">One row per server configuration and SLO (docs/search.md): '
        "the most load at which the SLO still holds, from a capacity search or derived "
        "from a plain sweep's or imported points (source); evidence: the last passing "
        "and the first failing probe or point, with their spreads.</p>"
        '<div class="scroll"><table class="search" id="search">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        + (f'<ul class="notes" id="search-notes">{unfound}</ul>' if unfound else "")
    )
