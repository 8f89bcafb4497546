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


HOVER = "Array.from(document.querySelectorAll('.hoverlayer .hovertext')).map(e => e.textContent)"


async def _drive_history(chromium: str, page: Path, profile: Path) -> dict:
    seen: dict = {}
    async with Browser(chromium, profile) as b:
        await b.open(page.resolve().as_uri(), READY)
        seen["traces"] = await b.evaluate(
            "document.getElementById('chart-pareto').data.map(t => t.name)"
        )
        seen["drawn"] = await b.evaluate(DRAWN)
        # hover the not-ok point's marker with the mouse: its details appear
        box = await b.evaluate(
            "(() => { const red = Array.from(document.querySelectorAll('#chart-pareto path.point'))"
            ".find(e => getComputedStyle(e).fill === 'rgb(214, 39, 40)');"
            " const r = red.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mouseMoved", "mouseMoved"):
            await b.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1]})
        await b.wait_for(f"{HOVER}.length > 0")
        seen["hover"] = await b.evaluate(HOVER)
        # history of the configuration with most versions, by date, with versions on it
        seen["history"] = await b.evaluate("document.getElementById('chart-history').data[0].text")
        seen["history_config"] = await b.evaluate("document.getElementById('history-config').value")
        # label filter by keyboard: "(all)" -> "n1" -> "n2"
        await b.evaluate("document.getElementById('f-label').focus()")
        await b.press("ArrowDown", "ArrowDown", 40)
        await b.wait_for("document.getElementById('f-label').value === 'n1'")
        seen["drawn_n1"] = await b.evaluate(DRAWN)
        seen["history_n1"] = await b.evaluate(
            "document.getElementById('chart-history').data[0].text"
        )
    return seen


def test_history_hover_and_not_ok_points(chromium: str, tmp_path: Path) -> None:
    from result_factory import make_result, write_results

    db = str(tmp_path / "x.duckdb")
    for night, version in ((1, "0.31"), (2, "0.32")):
        date = f"2026-12-0{night}T00:00:00+00:00"
        points = [
            make_result("h200-tp1-c4", tput_per_gpu=500.0 + night, concurrency=4, date=date),
            make_result("h200-tp1-c16", tput_per_gpu=1200.0, median_intvty=60.0 + night,
                        concurrency=16, date=date),
        ]  # fmt: skip
        if night == 2:  # a point cut short, with figures: drawn, and marked
            cut = make_result("h200-tp1-c64", status="interrupted", concurrency=64,
                              tput_per_gpu=1800.0, median_intvty=25.0, date=date)  # fmt: skip
            points.append(cut)
        for p in points:
            p["engine"]["version"] = version
        write_results(tmp_path / f"n{night}", points)
        argv = ["db", "ingest", str(tmp_path / f"n{night}"), "--db", db, "--label", f"n{night}"]
        assert main(argv) == 0
    page = tmp_path / "dash.html"
    assert main(["dashboard", "--db", db, "--output", str(page)]) == 0
    seen = asyncio.run(_drive_history(chromium, page, tmp_path / "profile"))
    assert "not ok (invalid / failed / interrupted)" in seen["traces"]
    assert seen["drawn"] == 5  # 4 ok markers + the interrupted one
    [hover] = seen["hover"]
    assert "h200-tp1-c64" in hover and "(interrupted)" in hover and "vllm 0.32" in hover
    assert "failure: engine exited" in hover and "labels n2" in hover
    assert seen["history_config"] == "h200-tp1-c16"
    assert seen["history"] == ["0.31", "0.32"]  # both nights, oldest first, versions on them
    assert seen["drawn_n1"] == 2 and seen["history_n1"] == ["0.31"]


async def _drive_unpriced(chromium: str, page: Path, profile: Path) -> dict:
    shown = (
        "(id => { const e = document.getElementById(id); return !e.hidden && e.offsetHeight > 0; })"
    )
    seen: dict = {}
    async with Browser(chromium, profile) as b:
        await b.open(page.resolve().as_uri(), READY)
        seen["message_shown"] = await b.evaluate(f"{shown}('cost-missing')")
        seen["chart_shown"] = await b.evaluate(f"{shown}('chart-cost')")
        seen["chart_svg"] = await b.evaluate("document.querySelectorAll('#chart-cost svg').length")
        seen["message"] = await b.evaluate("document.getElementById('cost-missing').innerText")
        # a price typed on the page: the chart is drawn and the message goes
        await b.evaluate("document.getElementById('price').focus()")
        await b.type("3")
        await b.wait_for(f"{shown}('chart-cost')")
        seen["message_after"] = await b.evaluate(f"{shown}('cost-missing')")
        seen["cost_after"] = await b.evaluate(
            "document.getElementById('chart-cost').data.filter(t => t.mode === 'markers')"
            ".map(t => t.y).flat()"
        )
    return seen


def test_without_a_price_the_cost_chart_says_what_is_missing(chromium: str, tmp_path: Path) -> None:
    from result_factory import make_result, write_results

    gpu = '<img src=x onerror="window.__pwned=1">GPU'  # no price table knows it
    cost = {"gpu_type": gpu, "tier": "owner"}
    points = [
        make_result("x-c4", cost=cost, tput_per_gpu=1000.0, concurrency=4),
        make_result("x-c16", cost=cost, tput_per_gpu=1800.0, median_intvty=30.0),
    ]
    write_results(tmp_path / "results", points)
    page = tmp_path / "dash.html"
    assert main(["dashboard", str(tmp_path / "results"), "--output", str(page)]) == 0
    seen = asyncio.run(_drive_unpriced(chromium, page, tmp_path / "profile"))
    assert seen["message_shown"] and not seen["chart_shown"] and seen["chart_svg"] == 0
    message = seen["message"]
    assert "no price per GPU-hour is known" in message
    for how in ("$/GPU/hr", "cost.usd_per_gpu_hour", "cost.gpu_type", "H200", "MI355X"):
        assert how in message, how
    assert f"2 point(s) shown, on {gpu}; none has a price." in message
    assert not seen["message_after"]
    assert sorted(seen["cost_after"]) == [
        pytest.approx(3 / (1800 * 3600 / 1e6)),
        pytest.approx(3 / (1000 * 3600 / 1e6)),
    ]
