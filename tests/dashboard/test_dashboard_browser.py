"""The dashboard in a real headless Chromium, driven by keyboard over CDP: choosing a
filter changes the points drawn; typing a $/GPU/hr changes the cost shown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dashboard.cdp import Browser
from result_factory import make_set

from inferx_core.cli import main

READY = "document.body && document.body.dataset.ready === '1'"
# Every marker Plotly drew on the Pareto chart (one SVG path per point).
DRAWN = "document.querySelectorAll('#chart-pareto .scatterlayer .points path.point').length"
LEGEND = (
    "Array.from(document.querySelectorAll('#chart-pareto .legendtext')).map(e => e.textContent)"
)


def _cost_cell(point: str) -> str:
    return f"document.querySelector('#cost-rows tr[data-point=\"{point}\"] td.cost').textContent"


def _data(tmp_path: Path) -> Path:
    folder = make_set(tmp_path / "results")  # 5 drawable points (4 H200, 1 MI300X), 1 failed
    out = tmp_path / "dash.html"
    assert main(["dashboard", str(folder), "--output", str(out)]) == 0
    return out


async def _drive(chromium: str, page: Path, profile: Path) -> dict:
    seen: dict = {}
    async with Browser(chromium, profile) as b:
        await b.open(page.resolve().as_uri(), READY)
        seen["drawn"] = await b.evaluate(DRAWN)
        seen["summary"] = await b.evaluate("document.getElementById('summary').textContent")
        seen["legend"] = await b.evaluate(LEGEND)
        seen["cost_before"] = await b.evaluate(_cost_cell("mi300x-tp1-c16"))
        seen["network"] = await b.evaluate(
            "performance.getEntriesByType('resource').map(e => e.name)"
        )
        # hardware filter: focus the select and press the down arrow, as a keyboard user
        # would: "(all)" -> "H200" (options are sorted)
        await b.evaluate("document.getElementById('f-hardware').focus()")
        await b.press("ArrowDown", "ArrowDown", 40)
        await b.wait_for("document.getElementById('f-hardware').value === 'H200'")
        seen["drawn_h200"] = await b.evaluate(DRAWN)
        seen["legend_h200"] = await b.evaluate(LEGEND)
        await b.press("ArrowDown", "ArrowDown", 40)  # -> "MI300X"
        await b.wait_for("document.getElementById('f-hardware').value === 'MI300X'")
        seen["drawn_mi300x"] = await b.evaluate(DRAWN)
        # type a price: the cost cell and the cost chart follow at once
        await b.evaluate("document.getElementById('price').focus()")
        await b.type("2.5")
        seen["price"] = await b.evaluate("document.getElementById('price').value")
        seen["cost_after"] = await b.evaluate(_cost_cell("mi300x-tp1-c16"))
        seen["cost_chart"] = await b.evaluate(
            "document.getElementById('chart-cost').data.filter(t => t.mode === 'markers')"
            ".map(t => t.y).flat()"
        )
    return seen


def test_filters_and_price_change_what_is_drawn(chromium: str, tmp_path: Path) -> None:
    page = _data(tmp_path)
    seen = asyncio.run(_drive(chromium, page, tmp_path / "profile"))
    assert seen["drawn"] == 5
    assert "6 of 6 point(s) selected, 5 drawn" in seen["summary"] and "1 not ok" in seen["summary"]
    assert sorted(seen["legend"]) == [
        "H200 | vllm | default | 1024/1024", "MI300X | vllm | default | 1024/1024"
    ]  # fmt: skip
    assert seen["network"] == []  # self-contained: nothing fetched
    assert seen["drawn_h200"] == 4 and seen["legend_h200"] == ["H200 | vllm | default | 1024/1024"]
    assert seen["drawn_mi300x"] == 1
    # $/M tokens = $/GPU/hr / (tok/s/GPU x 3600 / 1e6): the MI300X table price 1.12 first
    assert seen["cost_before"] == f"{1.12 / (1300 * 3600 / 1e6):.3f}" == "0.239"
    assert seen["price"] == "2.5"
    assert seen["cost_after"] == f"{2.5 / (1300 * 3600 / 1e6):.3f}" == "0.534"
    assert seen["cost_chart"] == [pytest.approx(2.5 / (1300 * 3600 / 1e6))]
