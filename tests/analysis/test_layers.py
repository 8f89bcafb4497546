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
