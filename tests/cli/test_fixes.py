"""``inferx fixes``: the catalogue, its evaluation on a platform and config, JSON and markdown,
and docs/fixes.md naming every fix of the catalogue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from inferx_core.cli import app as cli
from inferx_core.cli.fixes import catalogue, markdown_table
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.registries import fix_catalogue

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ROOT / "tests" / "platforms"
FIXES_MD = ROOT / "docs" / "fixes.md"
NVIDIA_IDS = {
    "nvidia-visible-devices",
    "nvidia-gpu-memory-preflight",
    "nccl-sm100-jit-cache",
    "flashinfer-cuda-arch-list",
    "nccl-graph-register-off",
    "flashinfer-shared-cache",
}


@pytest.fixture(autouse=True)
def fixes_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Register the sub-command as cli.py will (a no-op once it is there)."""
    if "inferx_core.cli.fixes" not in cli._EXTRA_COMMAND_MODULES:
        monkeypatch.setattr(
            cli, "_EXTRA_COMMAND_MODULES", (*cli._EXTRA_COMMAND_MODULES, "inferx_core.cli.fixes")
        )
    monkeypatch.setenv("INFERX_CACHE_DIR", str(tmp_path / "cache"))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["fixes", *args])
    out, err = capsys.readouterr()
    return code, out, err


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text.strip() + f"\noutput_dir: {tmp_path / 'results'}\n")
    return path


def test_json_lists_every_fix_with_its_facts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"fixes"}
    by_id = {f["id"]: f for f in data["fixes"]}
    assert set(by_id) >= NVIDIA_IDS
    for fix_id in NVIDIA_IDS:
        fix = by_id[fix_id]
        assert fix["plugin"] == "inferx.nvml"
        for key in ("title", "symptom", "condition", "change", "reference"):
            assert fix[key], (fix_id, key)
    expected = [fix.id for _, fix in fix_catalogue(get_plugin_manager())]
    assert [f["id"] for f in data["fixes"]] == expected  # application order


def test_text_lists_every_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    for fix_id in NVIDIA_IDS:
        assert f"{fix_id} (inferx.nvml):" in out
    assert "symptom:" in out and "reference:" in out


def test_a_fix_that_cannot_take_effect_in_a_container_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(capsys)
    blocks: dict[str, str] = {}
    for line in out.splitlines():
        if line and not line.startswith((" ", "─")):
            current = line.split(" ", 1)[0]
        elif line.startswith("  "):
            blocks[current] = blocks.get(current, "") + line + "\n"
    note = "  in a container: cannot take effect: a process launch's setting"
    assert note in blocks["nvidia-visible-devices"]  # docker's --gpus does its job
    assert "in a container:" not in blocks["nccl-sm100-jit-cache"]  # it works in one


def test_evaluation_for_a_config_on_a_platform(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        "engine: vllm\nmodel: meta-llama/Llama-3.1-70B-Instruct\nparallelism: {tp: 8}\n"
        "disable_fixes: [nvidia-visible-devices]",
    )
    code, out, _ = run(
        capsys, "--platform", str(PLATFORMS / "b200x8.json"), "--config", str(config), "--json"
    )
    assert code == 0
    (item,) = json.loads(out)["evaluations"]
    assert item["server"] == "Llama-3.1-70B-Instruct-vllm-tp8" and item["engine"] == "vllm"
    decisions = {d["id"]: d for d in item["decisions"]}
    assert decisions["nvidia-visible-devices"] == {
        "id": "nvidia-visible-devices",
        "applied": False,
        "reason": "disabled in config",
    }
    assert decisions["nccl-sm100-jit-cache"]["applied"] is True
    assert decisions["nccl-sm100-jit-cache"]["reason"] == (
        "compute capability 10.0 with NCCL 2.21.5 (platform software) < 2.26.2"
    )
    applied = {a["id"]: a for a in item["applied"]}
    assert applied["nccl-sm100-jit-cache"]["changes"]["env"]["set"]["CUDA_CACHE_MAXSIZE"] == (
        "4294967296"
    )
    assert "rocm-aiter-vllm" in decisions and not decisions["rocm-aiter-vllm"]["applied"]

    code, out, _ = run(
        capsys, "--platform", str(PLATFORMS / "b200x8.json"), "--config", str(config)
    )
    assert code == 0
    assert "applies nccl-sm100-jit-cache: compute capability 10.0 with NCCL 2.21.5" in out
    assert "not applied nvidia-visible-devices: disabled in config" in out


def test_platform_alone_evaluates_every_engine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--platform", str(PLATFORMS / "mi300x8.json"), "--json")
    assert code == 0
    evaluations = json.loads(out)["evaluations"]
    engines = {e["engine"] for e in evaluations}
    assert {"vllm", "sglang", "trtllm"} <= engines
    for item in evaluations:
        for decision in item["decisions"]:
            if decision["id"] in NVIDIA_IDS:
                assert decision == {
                    "id": decision["id"],
                    "applied": False,
                    "reason": "no NVIDIA GPU on this platform",
                }


def test_config_error_is_the_users(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = write_config(tmp_path, "engine: vllm\nmodel: m\nplugin_options: {nvidia: {x: 1}}")
    code, _, err = run(
        capsys, "--platform", str(PLATFORMS / "h100x8.json"), "--config", str(config)
    )
    assert code == 2
    assert "plugin_options.nvidia.x: unknown option; known: cache_dir, nccl_version" in err


def test_markdown_is_one_row_per_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--markdown")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert len(rows) == len(catalogue(get_plugin_manager()))
    assert (
        markdown_table(
            [{"id": "a", "plugin": "p", "title": "x|y", "condition": "c\nd", "change": "e"}]
        ).splitlines()[-1]
        == "| `a` | p | x\\|y | c d | e |"
    )


def documented_ids() -> set[str]:
    return set(re.findall(r"^\| `([a-z0-9-]+)` \|", FIXES_MD.read_text(), flags=re.M))


def test_every_fix_in_the_catalogue_is_documented() -> None:
    ids = {fix.id for _, fix in fix_catalogue(get_plugin_manager())}
    text = FIXES_MD.read_text()
    missing = sorted(i for i in ids if f"`{i}`" not in text)
    assert not missing, (
        f"docs/fixes.md does not name {missing}; regenerate its table with "
        "`inferx fixes --markdown` (between the fixes-table markers)"
    )
    stale = documented_ids() - ids
    assert not stale, f"docs/fixes.md lists fixes no plugin offers: {sorted(stale)}"


def test_every_nvidia_fix_has_a_section() -> None:
    text = FIXES_MD.read_text()
    for fix_id in NVIDIA_IDS:
        assert f"### `{fix_id}`" in text, fix_id
