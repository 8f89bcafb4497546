"""Plugin manager: discovery, filtering, failure isolation, validation, conflicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from inferx_core import hookimpl
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.manager import (
    PluginError,
    PluginHookError,
    get_plugin_manager,
)
from inferx_core.sdk.registries import EngineConflictError, detect_platform, engine_registry

SHIPPED = {"vllm", "sglang", "trtllm", "rocm", "example-tpu"}


def _module(name: str, **attrs: object) -> types.ModuleType:
    mod = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(mod, key, value)
    return mod


def _engine_plugin(name: str, engine: str) -> types.ModuleType:
    @hookimpl
    def inferx_engines():
        return [EngineInfo(name=engine, description=f"{engine} from {name}")]

    return _module(name, inferx_engines=inferx_engines)


def test_shipped_plugins_load_ok() -> None:
    pm = get_plugin_manager(env={})
    records = {r.name: r for r in pm.records}
    assert set(records) >= SHIPPED
    for name in SHIPPED:
        assert records[name].status == "ok", records[name].error
    assert records["vllm"].distribution == "inferx-vllm"
    assert "inferx_engine_launch_spec" in records["vllm"].hooks
    builtins = [r for r in pm.records if r.builtin]
    assert {r.name for r in builtins} == {"inferx.host", "inferx.nvml", "inferx.launchers"}
    assert set(engine_registry(pm).engines) >= {"vllm", "sglang", "trtllm", "example-tpu"}


def test_allow_list_filters_before_import() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": "vllm"})
    status = {r.name: r.status for r in pm.records}
    assert status["vllm"] == "ok"
    assert status["sglang"] == "disabled"
    assert pm.get_plugin("sglang") is None
    assert set(engine_registry(pm).engines) == {"vllm"}


def test_empty_allow_list_loads_no_entry_points_but_builtins() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""})
    loaded = {r.name for r in pm.records if r.status == "ok"}
    assert loaded == {"inferx.host", "inferx.nvml", "inferx.launchers"}


def test_block_list() -> None:
    pm = get_plugin_manager(env={"INFERX_DISABLE_PLUGINS": "sglang, trtllm"})
    status = {r.name: r.status for r in pm.records}
    assert status["sglang"] == status["trtllm"] == "disabled"
    assert status["vllm"] == "ok"


def test_unknown_hook_is_reported_with_plugin_name() -> None:
    @hookimpl
    def inferx_detect_platfrom():  # misspelt on purpose
        return None

    bad = _module("typo_plugin", inferx_detect_platfrom=inferx_detect_platfrom)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("typo", bad)])
    record = pm.record_for("typo")
    assert record is not None and record.status == "error"
    assert "inferx_detect_platfrom" in (record.error or "")
    assert pm.get_plugin("typo") is None
    pm.check_pending()  # the rest of the manager stays valid


def test_unmarked_prefixed_function_counts_as_implementation() -> None:
    def inferx_detect_platfrm():
        return None

    bad = _module("typo2", inferx_detect_platfrm=inferx_detect_platfrm)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("typo2", bad)])
    assert pm.record_for("typo2").status == "error"


def test_bad_hook_signature_is_reported() -> None:
    @hookimpl
    def inferx_engine_launch_spec(server, platform, not_a_param):
        return None

    bad = _module("sig", inferx_engine_launch_spec=inferx_engine_launch_spec)
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("sig", bad)])
    record = pm.record_for("sig")
    assert record.status == "error" and "not_a_param" in record.error
    assert pm.get_plugin("sig") is None


def test_strict_mode_raises() -> None:
    @hookimpl
    def inferx_nope():
        return None

    with pytest.raises(PluginError, match="inferx_nope"):
        get_plugin_manager(
            env={"INFERX_PLUGINS": "", "INFERX_STRICT_PLUGINS": "1"},
            extra_plugins=[("nope", _module("nope", inferx_nope=inferx_nope))],
        )


def test_engine_claimed_by_two_distributions_names_both() -> None:
    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": "vllm"},
        extra_plugins=[("impostor", _engine_plugin("impostor", "vllm"))],
    )
    registry = engine_registry(pm)
    assert "vllm" in registry.conflicts
    with pytest.raises(EngineConflictError) as info:
        registry.get("vllm")
    assert "inferx-vllm" in str(info.value) and "(in-process)" in str(info.value)


def test_failing_detector_becomes_a_note_not_a_crash() -> None:
    @hookimpl
    def inferx_platform():
        raise RuntimeError("driver on fire")

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("flaky", _module("flaky", inferx_platform=inferx_platform))],
    )
    platform = detect_platform(pm)
    assert platform.host is not None  # the built-in host detector still answered
    assert any("driver on fire" in n.message and n.source == "flaky" for n in platform.notes)


def test_firstresult_failure_names_the_plugin() -> None:
    @hookimpl
    def inferx_engine_metrics(server):
        raise ValueError("boom")

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("m", _module("m", inferx_engine_metrics=inferx_engine_metrics))],
    )
    with pytest.raises(PluginHookError, match="'m' failed in inferx_engine_metrics"):
        pm.call_first("inferx_engine_metrics", server=None)


# -- a plugin installed on the path whose import raises -----------------------
@pytest.fixture
def broken_plugin_path(tmp_path: Path) -> Path:
    """A fake installed distribution (dist-info + module) whose import raises."""
    (tmp_path / "inferx_broken.py").write_text("raise ImportError('needs libfoo.so')\n")
    dist = tmp_path / "inferx_broken-9.9.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: inferx-broken\nVersion: 9.9\n")
    (dist / "entry_points.txt").write_text("[inferx]\nbroken = inferx_broken\n")
    return tmp_path


def _run_cli(*args: str, path: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("INFERX_")}
    if path is not None:
        full_env["PYTHONPATH"] = f"{path}{os.pathsep}{full_env.get('PYTHONPATH', '')}"
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def test_cli_survives_a_broken_plugin_and_names_it(broken_plugin_path: Path) -> None:
    proc = _run_cli("plugins", "--json", path=broken_plugin_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    broken = by_name["broken"]
    assert broken["status"] == "error"
    assert broken["distribution"] == "inferx-broken" and broken["version"] == "9.9"
    assert "needs libfoo.so" in broken["error"]
    for name in SHIPPED:
        assert by_name[name]["status"] == "ok"
    # doctor still works too
    doctor = _run_cli("doctor", "--json", path=broken_plugin_path)
    assert doctor.returncode == 0, doctor.stderr
    assert any(e["name"] == "broken" for e in json.loads(doctor.stdout)["plugin_errors"])


def test_cli_strict_mode_fails_on_broken_plugin(broken_plugin_path: Path) -> None:
    proc = _run_cli("plugins", path=broken_plugin_path, INFERX_STRICT_PLUGINS="1")
    assert proc.returncode == 2
    assert "broken" in proc.stderr and "needs libfoo.so" in proc.stderr


def test_same_distribution_twice_on_path_loads_once(tmp_path: Path) -> None:
    for sub in ("a", "b"):
        root = tmp_path / sub
        root.mkdir()
        (root / "inferx_twice.py").write_text(
            textwrap.dedent(
                """
                from inferx_core import hookimpl
                from inferx_core.sdk.engine import EngineInfo

                @hookimpl
                def inferx_engines():
                    return [EngineInfo(name="twice", description="seen twice")]
                """
            )
        )
        dist = root / "inferx_twice-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: inferx-twice\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text("[inferx]\ntwice = inferx_twice\n")
    paths = f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"
    proc = _run_cli("plugins", "--json", path=Path(paths))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    twice = [p for p in data["plugins"] if p["name"] == "twice"]
    assert len(twice) == 1 and twice[0]["status"] == "ok"
    assert twice[0]["engines"] == ["twice"]
    assert data["engine_conflicts"] == {}


def test_cli_lists_launchers_and_executors_by_plugin() -> None:
    proc = _run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {p["name"]: p for p in json.loads(proc.stdout)["plugins"]}
    assert {"process", "docker", "srun"} <= set(rows["inferx.launchers"]["launchers"])
    assert rows["inferx.launchers"]["executors"] == ["slurm"]
