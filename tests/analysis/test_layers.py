"""`inferx compare` names the layer of the TTFT that moved: queue, prefill, decode or client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from result_factory import make_model

from inferx_core.analysis.compare import compare, load_side
from inferx_core.analysis.layers import layer_moved
from inferx_core.cli.app import main
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.anatomy import Anatomy, anatomy

MS = 1_000_000


def _anatomy(queue: float, server: float, rest: float, decode: float = 70.0) -> Anatomy:
    records = []
    for i in range(20):
        client = queue + server + rest + (i % 3) * 0.01
        rec = RequestRecord(i, 4, 8, send_ns=MS, usage_output_tokens=8, finish_reason="length")
        rec.chunk_ns = [MS + int(client * MS)]
        rec.server_figures = {"queue_ms": queue, "ttft_ms": server, "decode_ms": decode}
        records.append(rec)
    an = anatomy(records, "vllm")
    assert an is not None
    return an


def _write(folder: Path, an: Anatomy) -> None:
    folder.mkdir(parents=True)
    model = make_model("p-c8").model_copy(update={"anatomy": an})
    (folder / "p-c8.json").write_text(json.dumps(model.model_dump(mode="json")))


def test_compare_names_the_layer_that_moved_from_the_written_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "A", _anatomy(queue=2.0, server=20.0, rest=3.0))
    _write(tmp_path / "B", _anatomy(queue=40.0, server=21.0, rest=3.0, decode=140.0))
    result = compare(load_side("A", [tmp_path / "A"]), load_side("B", [tmp_path / "B"]))
    (point,) = result.points
    assert point["layers"]["layer"] == "queue"
    assert point["layers"]["parts"]["queue"]["change_ms"] == pytest.approx(38.0)
    json.dumps(result.to_json())  # strict JSON-able
    main(["compare", str(tmp_path / "A"), str(tmp_path / "B")])
    out = capsys.readouterr().out
    assert "the queue layer moved most (+38.00 ms)" in out
    assert "decode per token 10.00 -> 20.00 ms (+100%)" in out


def test_the_client_layer_and_no_move() -> None:
    a = _anatomy(queue=2.0, server=20.0, rest=3.0)
    moved = layer_moved(a, _anatomy(queue=2.0, server=20.0, rest=30.0))
    assert moved is not None and moved["layer"] == "client"
    still = layer_moved(a, _anatomy(queue=2.1, server=20.0, rest=3.0))
    assert still is not None and still["layer"] is None
    assert "no layer moved beyond the noise floor" in still["summary"]
    assert layer_moved(a, None) is None


# -- inferx report: the layer that moved between adjacent load points of a series ----------


def _write_series(folder: Path) -> None:
    """A sweep of one server (c1, c2, c8: the queue grows, then c16 with no anatomy) and a
    second series (another model) at c1 and c8 whose client-side rest grew."""
    folder.mkdir(parents=True)
    points = [
        ("srv-c1", 1, "org/Model-8B", _anatomy(queue=0.1, server=30.0, rest=20.0)),
        ("srv-c2", 2, "org/Model-8B", _anatomy(queue=0.2, server=30.5, rest=20.2)),
        ("srv-c8", 8, "org/Model-8B", _anatomy(queue=800.0, server=35.0, rest=50.0)),
        ("srv-c16", 16, "org/Model-8B", None),
        ("other-c1", 1, "org/Other-1B", _anatomy(queue=0.1, server=10.0, rest=5.0)),
        ("other-c8", 8, "org/Other-1B", _anatomy(queue=0.5, server=11.0, rest=60.0)),
    ]
    for pid, conc, model, an in points:
        result = make_model(pid, concurrency=conc, model=model).model_copy(update={"anatomy": an})
        (folder / f"{pid}.json").write_text(json.dumps(result.model_dump(mode="json")))


def test_report_names_the_layer_that_moved_along_each_series_in_every_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import csv

    from inferx_core.report import write_report

    _write_series(tmp_path / "runs")
    files = write_report([tmp_path / "runs"], tmp_path / "out", plots=False)
    with files.csv.open(newline="") as handle:
        rows = {r["point_id"]: r for r in csv.DictReader(handle)}
    # the first point of a series has no step; c2 moved within the noise floor (none named)
    assert rows["srv-c1"]["ttft_layer_from"] == "" and rows["srv-c1"]["ttft_layer"] == ""
    assert rows["srv-c2"]["ttft_layer_from"] == "srv-c1" and rows["srv-c2"]["ttft_layer"] == ""
    assert "no layer moved beyond the noise floor" in rows["srv-c2"]["ttft_layer_summary"]
    c8 = rows["srv-c8"]
    assert (c8["ttft_layer_from"], c8["ttft_layer"]) == ("srv-c2", "queue")
    assert float(c8["ttft_layer_change_ms"]) == pytest.approx(799.8)
    assert c8["ttft_layer_summary"].startswith("from srv-c2: TTFT median")
    # no anatomy at c16 (its engine reported no per-request timing): nothing to name
    assert rows["srv-c16"]["ttft_layer_summary"] == ""
    # another series is never compared with this one: its own first point has no step
    assert rows["other-c1"]["ttft_layer_from"] == ""
    assert (rows["other-c8"]["ttft_layer"], rows["other-c8"]["ttft_layer_from"]) == (
        "client",
        "other-c1",
    )
    page = files.html.read_text()
    assert 'id="ttft-layers"' in page and "TTFT layer moved" in page
    assert "srv-c8 TTFT layer: from srv-c2: TTFT median" in page
    assert "queue +799.8 ms" in page and "client +55.0 ms" in page
    # the console (inferx report) and --json carry it too
    main(["report", str(tmp_path / "runs"), "--output", str(tmp_path / "out2"), "--no-plots"])
    out = capsys.readouterr().out
    assert "srv-c8 TTFT layer: from srv-c2:" in out and "the queue layer moved most" in out
    assert "other-c8 TTFT layer: from other-c1:" in out and "the client layer moved most" in out
    main(["report", str(tmp_path / "runs"), "--output", str(tmp_path / "out3"), "--json"])
    printed = {r["point_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert printed["srv-c8"]["ttft_layer"] == "queue"
    assert printed["srv-c1"]["ttft_layer"] is None


def test_a_report_without_anatomies_shows_no_layer_column_nor_section(tmp_path: Path) -> None:
    from inferx_core.report import write_report

    folder = tmp_path / "runs"
    folder.mkdir()
    for pid, conc in (("srv-c1", 1), ("srv-c8", 8)):
        result = make_model(pid, concurrency=conc)
        (folder / f"{pid}.json").write_text(json.dumps(result.model_dump(mode="json")))
    files = write_report([folder], tmp_path / "out", plots=False)
    page = files.html.read_text()
    assert "ttft-layers" not in page and "TTFT layer moved" not in page
    assert all(r["ttft_layer_summary"] is None for r in files.rows)
