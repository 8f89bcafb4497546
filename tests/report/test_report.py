"""`inferx report` / `inferx compare`: CSV golden values, PNGs, self-contained HTML, CLI."""

from __future__ import annotations

import base64
import csv
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from result_factory import make_result, make_set, pixel_variety, write_results

from inferx_core.analysis.cost import CostOptions
from inferx_core.report import write_report
from inferx_core.results.files import read_result
from inferx_core.tables.points import CSV_COLUMNS

DATA = Path(__file__).parent / "data"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["point_id"]: row for row in csv.DictReader(handle)}


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[dict[str, str]] = []
        self.rows: list[str] = []
        self.external: list[str] = []
        self.scripts: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.imgs.append(a)
        if tag == "tr" and "data-point" in a:
            self.rows.append(a["data-point"])
        if tag == "script":
            self.scripts.append(a)
        for key in ("src", "href"):
            if a.get(key, "").startswith(("http:", "https:", "//")):
                self.external.append(a[key])
        if tag == "link":
            self.external.append(str(a))


def test_report_files_and_golden_csv(tmp_path: Path) -> None:
    files = write_report([make_set(tmp_path / "results")], tmp_path / "out")
    assert files.csv == tmp_path / "out" / "points.csv"
    rows = read_csv(files.csv)
    with files.csv.open() as handle:
        assert next(csv.reader(handle)) == list(CSV_COLUMNS)
    assert len(rows) == 6
    for column in ("median_intvty", "tput_per_gpu", "cost_per_mtok_total", "on_pareto"):
        assert column in CSV_COLUMNS
    assert {pid: r["on_pareto"] for pid, r in rows.items()} == {
        "h200-tp1-c4": "true",
        "h200-tp1-c16": "true",
        "h200-tp1-c64": "true",
        "h200-tp2-c16": "false",  # 1100 @ 55 < 1200 @ 60
        "mi300x-tp1-c16": "true",
        "h200-tp1-c256": "false",
    }
    c16 = rows["h200-tp1-c16"]
    assert float(c16["tput_per_gpu"]) == 1200.0
    # 1000 / median TPOT in the model: 60 comes back to within 1 ulp
    assert float(c16["median_intvty"]) == pytest.approx(60.0, rel=1e-15)
    assert float(c16["cost_per_mtok_total"]) == pytest.approx(1.41 / (1200 * 0.0036))
    assert float(c16["cost_per_mtok_output"]) == pytest.approx(1.41 / (600 * 0.0036))
    assert c16["price_source"] == "table H200 owner"
    assert c16["num_gpus_source"] == "result"
    assert c16["tok_s_per_mw_measured"] == ""  # no valid power
    mi = rows["mi300x-tp1-c16"]
    assert float(mi["tok_s_per_mw_measured"]) == pytest.approx(1300 / 650e-6)
    assert float(mi["tok_s_per_mw_provisioned"]) == pytest.approx(1300 * 1000 / 1.79)
    assert rows["h200-tp1-c256"]["status"] == "failed"
    assert rows["h200-tp1-c256"]["tput_per_gpu"] == ""
    assert any("failed" in w for w in files.warnings)


def test_plots_are_real_pngs_and_timelines_follow_telemetry(tmp_path: Path) -> None:
    files = write_report([make_set(tmp_path / "results")], tmp_path / "out")
    assert [p.name for p in files.plots] == [
        "throughput_vs_interactivity.png",
        "throughput_vs_latency.png",
        "latency_vs_concurrency.png",
        "cost_vs_interactivity.png",
    ]
    assert [p.name for p in files.timelines] == ["h200-tp1-c16.png"]  # c4 has host data only
    for png in [*files.plots, *files.timelines]:
        assert png.read_bytes().startswith(PNG_MAGIC)
        colours, non_white = pixel_variety(png)
        assert colours > 30 and non_white > 0.02, (png, colours, non_white)


def test_html_is_self_contained_with_plots_and_table(tmp_path: Path) -> None:
    files = write_report([make_set(tmp_path / "results")], tmp_path / "out", title="A <b> test")
    text = files.html.read_text()
    page = Page()
    page.feed(text)
    assert page.external == []
    assert all("src" not in s for s in page.scripts)
    assert len(page.imgs) == 5
    for img in page.imgs:
        assert img["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(img["src"].split(",", 1)[1]).startswith(PNG_MAGIC)
    assert page.rows == [r["point_id"] for r in files.rows]
    assert "A &lt;b&gt; test" in text  # escaped
    assert "points.csv" in text


def test_no_plots_and_no_cost_plot_without_prices(tmp_path: Path) -> None:
    folder = tmp_path / "results"
    write_results(folder, [make_result("x-c1", gpu_name=None, cost=None)])
    files = write_report([folder], tmp_path / "out")
    assert "cost_vs_interactivity.png" not in [p.name for p in files.plots]
    assert any("no cost" in n for n in files.notes)
    bare = write_report([folder], tmp_path / "bare", plots=False)
    assert bare.plots == [] and not list((tmp_path / "bare").glob("*.png"))
    assert bare.html.exists() and bare.csv.exists()


def test_report_of_a_real_vllm_cpu_result(tmp_path: Path) -> None:
    shutil.copytree(DATA / "vllm-cpu", tmp_path / "demo")
    files = write_report([tmp_path / "demo"], tmp_path / "demo" / "report")
    [row] = files.rows
    assert row["point_id"] == "demo-tiny-llama-vllm-tp1-completions-isl128-osl64-c8"
    assert (row["hardware"], row["engine"], row["engine_version"]) == ("CPU", "vllm", "0.32.0")
    assert row["num_gpus_source"].startswith("assumed")
    assert row["tput_per_gpu"] == 3122.736157765149  # total tok/s / 1 (assumed)
    assert row["median_intvty"] == 164.8611977470679
    assert row["cost_per_mtok_total"] is None and row["on_pareto"] is True
    assert [p.name for p in files.timelines] == [f"{row['point_id']}.png"]  # KV cache series
    # the report folder inside the results folder is not read back as results
    again = write_report([tmp_path / "demo"], tmp_path / "demo" / "report")
    assert len(again.rows) == 1 and again.loaded.skipped == []


def test_report_of_real_bench_results_with_assumed_gpus(tmp_path: Path) -> None:
    from inferx_core.config.models import BenchConfig, LoadProfile, Workload
    from inferx_core.pipeline.bench.api import run_bench
    from inferx_core.testing import ServerProcess

    with ServerProcess(ttft_ms=5, itl_ms=2) as server:
        run_bench(
            BenchConfig(
                base_url=server.base_url,
                workload=Workload(isl=32, osl=8),
                load=LoadProfile(concurrency=[1, 4], num_prompts=8),
                output_dir=tmp_path / "bench",
            ),
            progress=False,
        )
    options = CostOptions(num_gpus=8, gpu_type="H100")
    files = write_report([tmp_path / "bench"], tmp_path / "out", options)
    assert len(files.rows) == 2
    for row in files.rows:
        result = read_result(Path(row["path"]))
        assert result.throughput is not None
        assert result.throughput.tput_per_gpu is None  # the bench did not know the GPUs
        assert row["tput_per_gpu"] == pytest.approx(result.throughput.total_token_throughput / 8)
        assert row["num_gpus_source"] == "assumed (--num-gpus)"
        assert row["cost_per_mtok_total"] == pytest.approx(1.30 / (row["tput_per_gpu"] * 0.0036))
        assert row["engine"] == "external" and row["concurrency"] in (1, 4)
    assert any("assume 8 GPU" in n for n in files.notes)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch):
    """``inferx`` with the report commands, whether or not cli.py registers them yet."""
    import inferx_core.cli.app as cli_module

    if "inferx_core.cli.report" not in cli_module._EXTRA_COMMAND_MODULES:
        monkeypatch.setattr(
            cli_module,
            "_EXTRA_COMMAND_MODULES",
            (*cli_module._EXTRA_COMMAND_MODULES, "inferx_core.cli.report"),
        )
    return cli_module.main


def test_cli_report(tmp_path: Path, cli, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_set(tmp_path / "results")
    assert cli(["report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"report: {folder / 'report' / 'report.html'}" in out
    assert "h200-tp1-c16" in out and "tok/s/gpu" in out
    assert (folder / "report" / "points.csv").exists()
    assert cli(["report", str(folder), "--output", str(tmp_path / "r"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 6 and {"on_pareto", "cost_per_mtok_total"} <= set(rows[0])
    assert cli(["report", str(tmp_path / "empty-missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["report", str(tmp_path / "empty"), "--no-plots"]) == 2
    assert "no InferX result" in capsys.readouterr().err
    assert not (tmp_path / "empty" / "report").exists()
    assert cli(["report", str(folder), "--usd-per-gpu-hour", "H200=oops"]) == 2
    assert "TYPE=NUMBER" in capsys.readouterr().err


def test_cli_compare(tmp_path: Path, cli, capsys: pytest.CaptureFixture[str]) -> None:
    a = [make_result(f"p-c{c}", tput_per_gpu=100.0 * c, concurrency=c) for c in (4, 16)]
    b = [make_result("p-c4", tput_per_gpu=300.0, concurrency=4)]
    b.append(make_result("p-c16", tput_per_gpu=1000.0, concurrency=16))  # -37.5%
    write_results(tmp_path / "A", a)
    write_results(tmp_path / "B", b)
    assert cli(["compare", str(tmp_path / "A"), str(tmp_path / "B")]) == 0
    out = capsys.readouterr().out
    assert "0.750x better" not in out
    assert "0.750x worse" in out  # 300 vs 400 tok/s/gpu
    assert "0.625x worse" in out
    argv = ["compare", str(tmp_path / "A"), str(tmp_path / "B")]
    assert cli([*argv, "--fail-on-regression"]) == 1
    capsys.readouterr()
    assert cli([*argv, "--json", "--at", "10"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["matched_by"] == "point_id" and len(data["points"]) == 2
    assert cli([*argv, "--noise", "0.5"]) == 0
    assert "worse" not in capsys.readouterr().out.split("verdict only")[0]
    assert cli([*argv, "--noise", "2"]) == 2
    far = [make_result("q-c4", tput_per_gpu=1.0, median_intvty=500.0, concurrency=4)]
    write_results(tmp_path / "C", far)
    capsys.readouterr()
    assert cli(["compare", str(tmp_path / "A"), str(tmp_path / "C"), "--match", "load"]) == 0
    assert "no interactivity inside both ranges (A 50.0-50.0, B 500.0-500.0" in (
        capsys.readouterr().out
    )


def test_report_commands_register_without_heavy_imports() -> None:
    code = (
        "import sys, argparse\n"
        "from inferx_core.cli import report as cli_report\n"
        "cli_report.register_command(argparse.ArgumentParser().add_subparsers())\n"
        "heavy = ('matplotlib', 'numpy', 'pydantic', 'rich', 'inferx_core.analysis',\n"
        "         'inferx_core.report')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_analysis_does_not_import_matplotlib(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from inferx_core.analysis import compare, cost, pareto, points\n"
        "from inferx_core.report import write_report\n"
        f"write_report([{str(make_set(tmp_path / 'r'))!r}], {str(tmp_path / 'o')!r}, plots=False)\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_schema_1_fixture_reports_the_numbers_it_holds(tmp_path: Path) -> None:
    """The kept schema-1 file, read through the migration, reports exactly its own figures;
    written back as schema 2 it reports the same rows again."""
    from inferx_core.analysis.points import METRIC_FIELDS
    from inferx_core.results.files import write_result

    shutil.copytree(DATA / "vllm-cpu", tmp_path / "v1")
    [path] = (tmp_path / "v1").glob("*.json")
    old = json.loads(path.read_text())
    assert old["schema_version"] == 1
    [row] = write_report([tmp_path / "v1"], tmp_path / "out-v1", plots=False).rows
    assert {k: row[k] for k in METRIC_FIELDS} == {k: old.get(k) for k in METRIC_FIELDS}
    assert row["tput_per_gpu"] == old["total_token_throughput"]  # 1 GPU assumed
    assert (row["status"], row["mode"], row["concurrency"]) == ("ok", "closed", 8)
    assert row["date"] == old["date"]
    write_result(tmp_path / "v2", read_result(path))
    assert json.loads(next((tmp_path / "v2").glob("*.json")).read_text())["schema_version"] == 2
    [again] = write_report([tmp_path / "v2"], tmp_path / "out-v2", plots=False).rows
    assert {k: v for k, v in again.items() if k != "path"} == {
        k: v for k, v in row.items() if k != "path"
    }


def test_an_invalid_result_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    folder = make_set(tmp_path / "results")
    broken = make_result("broken-c1")
    broken["status"] = "exploded"
    write_results(folder, [broken])
    files = write_report([folder], tmp_path / "out", plots=False)
    assert "broken-c1" not in {r["point_id"] for r in files.rows} and len(files.rows) == 6
    [warning] = [w for w in files.warnings if "broken-c1.json" in w]
    assert "invalid result" in warning
