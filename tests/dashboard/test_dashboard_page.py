"""The dashboard page without a browser: self-contained, its data, from a database or folders."""

from __future__ import annotations

import json
import re
from pathlib import Path

from result_factory import make_result, make_set, write_results

from inferx_core.cli import main
from inferx_core.dashboard.data import COLUMNS


def _embedded(page: Path) -> list[dict]:
    text = page.read_text()
    pattern = r'<script type="application/json" id="inferx-data">(.*?)</script>'
    found = re.search(pattern, text, re.S)
    assert found
    data = json.loads(found.group(1))
    assert data["columns"] == list(COLUMNS)
    return [dict(zip(data["columns"], row, strict=True)) for row in data["rows"]]


def test_page_is_self_contained(tmp_path: Path) -> None:
    out = tmp_path / "dash.html"
    assert main(["dashboard", str(make_set(tmp_path / "r")), "--output", str(out)]) == 0
    text = out.read_text()
    assert "Plotly" in text and len(text) > 3_000_000  # plotly.min.js is inline
    # the markup loads nothing by reference (plotly.js's code holds link strings of its own;
    # the browser test checks that nothing is fetched at all)
    markup = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', markup)
    assert "<script src" not in text and "<link" not in text
    points = _embedded(out)
    assert sorted(p["point_id"] for p in points)[0] == "h200-tp1-c16"
    assert {p["labels"][0] for p in points} == {"r"}  # a folder's points carry its name


def test_page_from_the_database_carries_labels_and_versions(tmp_path: Path) -> None:
    db = str(tmp_path / "x.duckdb")
    for day, version in ((1, "0.31"), (2, "0.32")):
        point = make_result("h200-tp1-c16", date=f"2026-12-0{day}T00:00:00+00:00")
        point["engine"]["version"] = version
        write_results(tmp_path / f"n{day}", [point])
        argv = ["db", "ingest", str(tmp_path / f"n{day}"), "--db", db, "--label", f"n{day}"]
        assert main(argv) == 0
    out = tmp_path / "dash.html"
    assert main(["dashboard", "--db", db, "--output", str(out)]) == 0
    points = _embedded(out)
    assert [(p["engine_version"], p["labels"]) for p in points] == [
        ("0.31", ["n1"]), ("0.32", ["n2"])
    ]  # fmt: skip


def test_serve_serves_the_page_and_nothing_else(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder = make_set(tmp_path / "r")
    out = tmp_path / "r" / "dash.html"  # beside the results, which must not be served
    argv = [sys.executable, "-m", "inferx_core.cli", "dashboard", str(folder), "--output",
            str(out), "--serve", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
        assert page == out.read_bytes()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/h200-tp1-c4.json", timeout=5)
            raise AssertionError("a result file was served")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)
