"""The HTML report opens in headless Chromium: plots decode, the table renders, not blank."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from result_factory import make_set, pixel_variety

from inferx_core.report import write_report
from inferx_core.report.html import Figure, PageContent, write_html


def test_report_renders_in_headless_chromium(tmp_path: Path, headless) -> None:
    files = write_report([make_set(tmp_path / "results")], tmp_path / "out")
    url = files.html.resolve().as_uri()

    shot = tmp_path / "shot.png"
    headless(f"--screenshot={shot}", "--window-size=1400,2000", url)
    import matplotlib.image

    assert matplotlib.image.imread(shot).shape[:2] == (2000, 1400)
    colours, non_white = pixel_variety(shot)
    # A blank or error page has a handful of colours; plots and text have hundreds.
    assert colours > 200 and non_white > 0.05, (colours, non_white)

    dom = headless("--dump-dom", url)
    assert re.search(r'<body[^>]*data-images-decoded="5/5"', dom), dom[:500]
    imgs = re.findall(r"<img [^>]*>", dom)
    assert len(imgs) == 5
    assert all('data-decoded="1"' in tag for tag in imgs)
    rows = re.findall(r'<tr[^>]*data-point="([^"]+)"', dom)
    assert rows == [r["point_id"] for r in files.rows]
    assert "<td>h200-tp1-c16</td>" in dom


def test_the_decode_check_catches_a_broken_image(tmp_path: Path, headless) -> None:
    good = tmp_path / "good.png"
    write_report([make_set(tmp_path / "results")], tmp_path / "out")
    good.write_bytes((tmp_path / "out" / "throughput_vs_interactivity.png").read_bytes())
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + base64.b64decode("AAAA") * 10)
    page = PageContent(
        title="control",
        sources=["x"],
        rows=[],
        figures=[Figure(good, "good"), Figure(broken, "broken")],
    )
    html = write_html(page, tmp_path / "control.html")
    dom = headless("--dump-dom", html.resolve().as_uri())
    assert 'data-images-decoded="1/2"' in dom
    assert [m for m in re.findall(r'data-decoded="(\d)"', dom)] == ["1", "0"]
