"""Result data is text in the HTML report and its plots, never markup: hostile strings in
every field that reaches the page (the buyer's table of capacity searches included) run
no script in a real Chromium and show as written;
in the matplotlib plots, dollars are not mathtext (a malformed formula cannot fail the
report, a price "$2 and $3" keeps its dollars)."""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path
from typing import Any

import pytest
from dashboard.cdp import Browser
from dashboard.hostile import PAYLOADS, hostile, hostile_results
from result_factory import make_result, write_results

from inferx_core.cli import main
from inferx_core.report import plots, write_report

READY = "document.body && document.body.dataset.imagesDecoded"
INJECTED = "document.querySelectorAll('iframe, svg, [onerror], [onload], [srcdoc]').length"
TITLE = PAYLOADS[0] + PAYLOADS[1] + "title"


async def _look(chromium: str, page: Path, profile: Path) -> dict[str, Any]:
    async with Browser(chromium, profile) as b:
        await b.open(page.resolve().as_uri(), READY)
        return {
            "pwned": await b.evaluate("typeof window.__pwned"),
            "injected": await b.evaluate(INJECTED),
            "images": await b.evaluate("document.body.dataset.imagesDecoded"),
            "plain_images": await b.evaluate(
                "Array.from(document.images).every(i => i.src.startsWith('data:image/png'))"
            ),
            "title": await b.evaluate("document.title"),
            "h1": await b.evaluate("document.querySelector('h1').textContent"),
            "table": await b.evaluate("document.getElementById('points').textContent"),
            "rows": await b.evaluate(
                "Array.from(document.querySelectorAll('#points tr[data-point]'))"
                ".map(r => r.dataset.point)"
            ),
            "meta": await b.evaluate("document.querySelector('p.meta').textContent"),
            "search": await b.evaluate("document.getElementById('search').textContent"),
            "searches": await b.evaluate(
                "Array.from(document.querySelectorAll('#search tr[data-search]'))"
                ".map(r => r.dataset.search)"
            ),
            "search_notes": await b.evaluate("document.getElementById('search-notes').textContent"),
        }


#: A capacity search's summary with a hostile value in every text field the page shows.
SEARCH_FIELDS = ("search", "slo", "bound", "reason", "knee")


def hostile_s(field: str) -> str:
    """The hostile value of a search summary's ``field`` (as ``hostile`` for results)."""
    return PAYLOADS[SEARCH_FIELDS.index(field) % len(PAYLOADS)] + field


def hostile_search(folder: Path) -> Path:
    """``folder/search/<id>.json``: a budget-stopped search, each shown string hostile."""
    evidence = {
        "level": 4, "state": "pass", "score": 0.5, "spread": [0.4, 0.6], "runs": 2,
        "uncertain": False, "binding": hostile_s("bound"), "point_id": hostile("point"),
    }  # fmt: skip
    summary = {
        "search_id": hostile_s("search"), "server_id": None, "over": "concurrency",
        "slo": hostile_s("slo"), "limits": {"ttft_ms": 50}, "goodput_target": 0.99,
        "status": "budget", "reason": hostile_s("reason"), "capacity": 4,
        "capacity_point_id": hostile("point"), "binding_slo": hostile_s("bound"),
        "last_pass": evidence, "first_fail": None, "probes": [evidence], "runs": 2,
        "noise_band": 0.1, "at_capacity": {"request_goodput": 3.5},
        "knee": {"level": 4, "next_level": 8, "reason": hostile_s("knee")},
    }  # fmt: skip
    (folder / "search").mkdir(parents=True, exist_ok=True)
    path = folder / "search" / "hostile.json"
    path.write_text(json.dumps(summary))
    return path


def test_hostile_results_are_text_in_the_report_in_chromium(chromium: str, tmp_path: Path) -> None:
    folder = hostile_results(tmp_path / PAYLOADS[2].replace("/", "") / "results")
    hostile_search(folder)
    imported = tmp_path / "imported"  # the report reads an aggregate once imported
    assert main(["import", str(folder / "agg_hostile.json"), "--output", str(imported)]) == 0
    files = write_report([folder, imported], tmp_path / "report", title=TITLE)
    assert len(files.plots) == 4  # the plots drew every hostile name without failing
    seen = asyncio.run(_look(chromium, files.html, tmp_path / "profile"))
    assert seen["pwned"] == "undefined" and seen["injected"] == 0, seen
    assert seen["images"] == "4/4" and seen["plain_images"]
    assert seen["title"] == TITLE and seen["h1"] == TITLE
    assert str(folder) in seen["meta"]  # the source folder, hostile name and all
    assert sorted(seen["rows"]) == sorted([hostile("point"), "plain-c16", "bad-c64", "hostile-c8"])
    for field in ("point", "hardware", "hw", "engine", "precision"):
        assert hostile(field) in seen["table"], field
    assert seen["searches"] == [hostile_s("search")]  # the buyer's table: one row, as text
    for field in ("search", "slo", "bound"):
        assert hostile_s(field) in seen["search"], field
    assert hostile_s("reason") in seen["search_notes"]


def test_the_buyers_table_in_the_page_is_escaped_text(tmp_path: Path) -> None:
    """Without a browser: the search table is on the page, every hostile value escaped."""
    folder = hostile_results(tmp_path / "results")
    hostile_search(folder)
    files = write_report([folder], tmp_path / "report", plots=False)
    [row] = files.search
    assert row["search_id"] == hostile_s("search") and row["capacity"] == 4
    page = files.html.read_text()
    assert '<table class="search" id="search">' in page
    for field in ("search", "slo", "bound", "reason"):
        assert html.escape(hostile_s(field)) in page, field
    for payload in PAYLOADS[:3] + PAYLOADS[5:6]:
        assert payload not in page  # never raw markup


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The matplotlib figures the plots save, as saved."""
    figures: list[Any] = []
    save = plots._save

    def keep(fig: Any, path: Path) -> Path:
        out = save(fig, path)
        figures.append(fig)
        return out

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def _texts(fig: Any) -> list[Any]:
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_text()]


def test_plot_texts_from_data_are_drawn_as_written(drawn: list[Any], tmp_path: Path) -> None:
    folder = hostile_results(tmp_path / "results")
    (folder / "point0.telemetry.jsonl").write_text(
        '{"t_s": 0, "gpu.0.power_w": 300}\n{"t_s": 1, "gpu.0.power_w": 310}\n'
    )
    files = write_report([folder], tmp_path / "report")
    assert len(files.plots) == 4 and len(files.timelines) == 1
    dollars = hostile("precision")
    assert dollars.startswith("$\\nosuchcmd$")
    shown = [t for fig in drawn for t in _texts(fig) if dollars in t.get_text()]
    assert len(shown) >= 4  # each summary plot's legend names the hostile group
    assert all(not t.get_parse_math() and not t.get_usetex() for t in shown)
    titled = [t for t in _texts(drawn[-1]) if hostile("point") in t.get_text()]
    assert titled and not any(t.get_parse_math() for t in titled)  # the timeline's title


def _axis_text(fig: Any) -> dict[str, Any]:
    fig.canvas.draw()
    ax = fig.axes[0]
    return {
        "x": [t.get_text() for t in ax.get_xticklabels() if t.get_text()],
        "y": [t.get_text() for t in ax.get_yticklabels() if t.get_text()],
        "offsets": [ax.xaxis.get_offset_text().get_text(), ax.yaxis.get_offset_text().get_text()],
    }


def test_close_values_read_as_themselves_without_an_offset(
    drawn: list[Any], tmp_path: Path
) -> None:
    rows_at = (124.96, 124.98, 125.0, 125.02, 125.04)
    results = [
        make_result(f"c{i}", median_intvty=x, tput_per_gpu=2_000_000.0 + i, concurrency=i + 1)
        for i, x in enumerate(rows_at)
    ]
    write_results(tmp_path / "results", results)
    write_report([tmp_path / "results"], tmp_path / "report", timelines=False)
    text = _axis_text(drawn[0])  # throughput vs interactivity
    assert text["offsets"] == ["", ""], text
    xs = [float(s.replace("\u2212", "-")) for s in text["x"]]
    assert min(xs) >= 124.9 and max(xs) <= 125.1 and len(xs) >= 3, text
    assert any("124.96" in s or "124.98" in s for s in text["x"]), text
    ys = [float(s.replace("\u2212", "-").replace(",", "")) for s in text["y"]]
    assert max(ys) >= 1_500_000, text  # millions as millions, not "1e6" in the corner


def test_a_point_id_cannot_place_a_timeline_outside_the_report(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    write_results(folder, [make_result("p")])
    point = folder / "p.json"
    point.write_text(point.read_text().replace('"point_id": "p"', '"point_id": "../../escaped"'))
    (folder / "p.telemetry.jsonl").write_text(
        '{"t_s": 0, "gpu.0.power_w": 300}\n{"t_s": 1, "gpu.0.power_w": 310}\n'
    )
    files = write_report([folder], tmp_path / "out" / "report")
    [timeline] = files.timelines
    assert timeline.resolve().parent == (tmp_path / "out" / "report" / "timelines").resolve()
    assert [p.name for p in tmp_path.rglob("*.png") if "report" not in p.parts] == []
