"""``inferx report``'s cost flags: parsed in the CLI, before the report reads a file."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from result_factory import make_result, write_results

from inferx_core.analysis.cost import CostOptions
from inferx_core.cli.report import per_type


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    import inferx_core.cli.app as cli_module

    if "inferx_core.cli.report" not in cli_module._EXTRA_COMMAND_MODULES:
        monkeypatch.setattr(
            cli_module,
            "_EXTRA_COMMAND_MODULES",
            (*cli_module._EXTRA_COMMAND_MODULES, "inferx_core.cli.report"),
        )
    return cli_module.main


def _prices(path: Path) -> dict[str, tuple[str, str]]:
    with path.open(newline="") as handle:
        return {
            r["point_id"]: (r["usd_per_gpu_hour"], r["price_source"])
            for r in csv.DictReader(handle)
        }


def test_per_type_reads_every_gpu_and_one_type() -> None:
    assert per_type(["2.5", "MI300X=1.1"], "x") == {"*": 2.5, "MI300X": 1.1}
    assert per_type(None, "x") is None and per_type([], "x") is None
    with pytest.raises(ValueError, match="x: 'H200=cheap' is not NUMBER or TYPE=NUMBER"):
        per_type(["H200=cheap"], "x")
    for bad in ("-1", "0", "nan", "inf"):
        with pytest.raises(ValueError, match="must be > 0"):
            per_type([bad], "x")


def test_cost_options_spell_the_types_once_the_last_winning() -> None:
    options = CostOptions(usd_per_gpu_hour={"*": 1.0, "h200": 2.0, "H200": 3.0})
    assert options.usd_per_gpu_hour == {"*": 1.0, "H200": 3.0}
    assert CostOptions(kw_per_gpu={"mi300x": 1.5}).kw_per_gpu == {"MI300X": 1.5}


def test_the_written_csv_prices_each_type_as_the_flags_say(tmp_path: Path, cli) -> None:
    write_results(
        tmp_path / "r",
        [make_result("h200-c4"), make_result("mi-c4", gpu_name="AMD Instinct MI300X")],
    )
    flags = ["--usd-per-gpu-hour", "h200=2", "--usd-per-gpu-hour", "H200=3"]
    out = tmp_path / "out"
    assert cli(["report", str(tmp_path / "r"), "--no-plots", "--output", str(out), *flags]) == 0
    prices = _prices(out / "points.csv")
    assert prices["h200-c4"] == ("3.0", "user")  # one type twice: the last flag wins
    assert prices["mi-c4"][1].startswith("table MI300X")  # no flag for it: the table


def test_a_bad_price_is_refused_before_anything_is_written(
    tmp_path: Path, cli, capsys: pytest.CaptureFixture[str]
) -> None:
    write_results(tmp_path / "r", [make_result("h200-c4")])
    out = tmp_path / "out"
    assert cli(["report", str(tmp_path / "r"), "--output", str(out), "--kw-per-gpu", "-1"]) == 2
    assert "--kw-per-gpu: '-1' must be > 0" in capsys.readouterr().err
    assert not out.exists()
