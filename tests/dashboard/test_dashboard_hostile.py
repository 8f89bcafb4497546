"""Result data is text in the dashboard, never markup: in a real Chromium, hostile strings
in every field that reaches the page (from result folders, an InferenceX aggregate and a
database label) run no script, break nothing, and show as the characters they are."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dashboard.cdp import Browser
from dashboard.hostile import FIELDS, LABEL, PAYLOADS, hostile, hostile_results
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core.cli import main
from inferx_core.dashboard.page import script_json

READY = "document.body && document.body.dataset.ready === '1'"
# What a reader sees, place by place: tables, selects, and the text Plotly drew in the charts.
PLACES = {
    "cost": "document.getElementById('cost-rows').textContent",
    "invalid": "document.getElementById('invalid-rows').textContent",
    "filters": "Array.from(document.querySelectorAll('header option')).map(o => o.textContent)"
    ".join('\\n')",
    "history_select": "Array.from(document.querySelectorAll('#history-config option'))"
    ".map(o => o.textContent).join('\\n')",
    "legend": "Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)"
    ".join('\\n')",
    "titles": "Array.from(document.querySelectorAll('.gtitle')).map(e => e.textContent)"
    ".join('\\n')",
    "marker_text": "Array.from(document.querySelectorAll('#chart-history .textpoint'))"
    ".map(e => e.textContent).join('\\n')",
}
HOVER = "Array.from(document.querySelectorAll('.hoverlayer .hovertext')).map(e => e.textContent)"
# Markup a payload would have made, had it been parsed (Plotly's own SVG has none of these).
INJECTED = "document.querySelectorAll('img, iframe, [onerror], [onload], [srcdoc]').length"


async def _look(chromium: str, page: Path, profile: Path) -> dict:
    seen: dict = {}
    async with Browser(chromium, profile) as b:
        await b.open(page.resolve().as_uri(), READY)
        for name, expression in PLACES.items():
            seen[name] = await b.evaluate(expression)
        seen["history_options"] = await b.evaluate(
            "Array.from(document.querySelectorAll('#history-config option')).map(o => o.value)"
        )
        # every point of the history select, drawn in turn (its title and marker text)
        for value in seen["history_options"]:
            await b.evaluate(
                "(() => { const s = document.getElementById('history-config');"
                f" s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()"
            )
            seen["titles"] += "\n" + await b.evaluate(PLACES["titles"])
            seen["marker_text"] += "\n" + await b.evaluate(PLACES["marker_text"])
        seen["hover"] = []
        for curve in range(await b.evaluate("document.getElementById('chart-pareto').data.length")):
            await b.evaluate(
                f"Plotly.Fx.hover('chart-pareto', [{{curveNumber: {curve}, pointNumber: 0}}])"
            )
            seen["hover"] += await b.evaluate(HOVER)
        seen["pwned"] = await b.evaluate("typeof window.__pwned")
        seen["injected"] = await b.evaluate(INJECTED)
        seen["summary"] = await b.evaluate("document.getElementById('summary').dataset.selected")
    return seen


def _assert_text_not_markup(seen: dict, label: str) -> None:
    assert seen["pwned"] == "undefined", seen
    assert seen["injected"] == 0
    assert seen["summary"] == "4"  # 3 points and the aggregate: the page rendered them all
    hover = "\n".join(seen["hover"])
    where = {
        "point": ("cost", "history_select", "titles"),
        "failed": ("invalid",),
        "hardware": ("cost", "filters", "legend"),
        "hw": ("cost", "filters", "legend"),
        "engine": ("cost", "filters", "legend"),
        "version": ("filters", "marker_text"),
        "model": ("filters",),
        "precision": ("cost", "filters", "legend"),
    }
    for field, places in where.items():
        for place in places:
            assert hostile(field) in seen[place], (field, place, seen[place])
    for field in ("point", "hardware", "engine", "version", "model", "precision"):
        assert hostile(field) in hover, (field, hover)
    assert label in seen["filters"] and label in hover
    assert hostile("failed") in hover or hostile("failed") in seen["invalid"]


def test_hostile_result_folders_are_text_in_chromium(chromium: str, tmp_path: Path) -> None:
    folder = hostile_results(tmp_path / LABEL)
    page = tmp_path / "dash.html"
    assert main(["dashboard", str(folder), "--output", str(page)]) == 0
    seen = asyncio.run(_look(chromium, page, tmp_path / "profile"))
    _assert_text_not_markup(seen, LABEL)


def test_hostile_database_points_are_text_in_chromium(chromium: str, tmp_path: Path) -> None:
    folder = hostile_results(tmp_path / "results")
    db = str(tmp_path / "x.duckdb")
    label = PAYLOADS[1] + "db-label"
    assert main(["db", "ingest", str(folder), "--db", db, "--label", label]) == 0
    page = tmp_path / "dash.html"
    assert main(["dashboard", "--db", db, "--output", str(page)]) == 0
    seen = asyncio.run(_look(chromium, page, tmp_path / "profile"))
    _assert_text_not_markup(seen, label)


def test_every_field_has_a_hostile_value() -> None:
    assert len({hostile(f) for f in FIELDS}) == len(FIELDS)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_script_json_is_inert_inside_a_script_element(value: object) -> None:
    text = script_json(value)
    assert json.loads(text) == value
    # nothing that can end a <script> element or enter the parser's escaped states
    assert not {"<", ">", "&", "\u2028", "\u2029"} & set(text)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_page_holds_no_payload_verbatim_outside_plain_text(
    payload: str, tmp_path: Path
) -> None:
    """The written page never holds a payload's ``<`` as such: in the data block it is
    ``\\u003c``, and nowhere else is result data written by Python."""
    folder = hostile_results(tmp_path / "results")
    page = tmp_path / "dash.html"
    assert main(["dashboard", str(folder), "--output", str(page)]) == 0
    text = page.read_text()
    data = text.split('id="inferx-data">', 1)[1].split("</script>", 1)[0]
    assert payload not in text
    assert script_json(payload)[1:-1] in data
