"""CLI consistency for a newcomer (issue 19): full-width tables when piped, no 'None'
printed, one port story in `plan`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferx_core.cli.app import PIPED_WIDTH, main
from inferx_core.cli.doctor import accelerator_line, host_line

PLATFORMS = Path(__file__).resolve().parents[1] / "platforms"


def test_plugins_table_is_not_cut_at_80_columns_when_piped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) > 80
    assert max(map(len, lines)) <= PIPED_WIDTH
    hooks_cell = "container_fixes, engine_launch_spec, engine_readiness, engines, platform"
    assert any(hooks_cell in line for line in lines)  # one row, not wrapped


def test_doctor_prints_no_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    platform = {
        "host": {"hostname": "tpu-vm", "cpu_logical_cores": 8},
        "accelerators": [{"vendor": "google", "index": 0, "name": "Google TPU"}],
    }
    path = tmp_path / "tpu.json"
    path.write_text(json.dumps(platform))
    assert main(["doctor", "--platform", str(path)]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    assert "google #0: Google TPU" in out and "tpu-vm: 8 logical cores" in out


def test_doctor_lines_leave_missing_facts_out() -> None:
    assert accelerator_line({"vendor": "amd", "index": 1, "name": "MI300X"}) == "amd #1: MI300X"
    assert (
        accelerator_line(
            {
                "vendor": "nvidia",
                "index": 0,
                "name": "H200",
                "arch": "sm_90",
                "memory_total_mib": 143771,
                "driver_version": None,
            }
        )
        == "nvidia #0: H200 arch=sm_90 mem=143771 MiB"
    )
    assert host_line({}) == "host: no details"


def test_plan_says_the_shown_port_is_a_placeholder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("engine: vllm\nmodel: org/m\n")
    assert main(["plan", str(config), "--platform", str(PLATFORMS / "h200x8.json")]) == 0
    text = capsys.readouterr().out
    assert "--port 8000" in text
    assert "port 8000: the engine's default, shown here; no port is configured" in text
    assert main(["plan", str(config), "--json", "--platform", str(PLATFORMS / "h200x8.json")]) == 0
    (item,) = json.loads(capsys.readouterr().out)
    assert item["port"] == 8000 and item["port_note"] == "picked free at run time"
    config.write_text("engine: vllm\nmodel: org/m\nport: 8123\n")
    assert main(["plan", str(config), "--platform", str(PLATFORMS / "h200x8.json")]) == 0
    assert "the engine's default" not in capsys.readouterr().out
