"""`inferx plugins` calls every hook that needs no run, detection included (issue 19).

A detector that builds an invalid ``Accelerator`` (``extra`` maps str -> str)
or a registration hook that answers the wrong type is listed as a hook
failure; with INFERX_STRICT_PLUGINS=1 all of them fail the command together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from inferx_core import Accelerator, Platform, hookimpl
from inferx_core.sdk.manager import PluginError, get_plugin_manager
from inferx_core.sdk.registries import check_hooks

BAD_DETECTOR = """
from inferx_core import Accelerator, Platform, hookimpl


@hookimpl
def inferx_platform():
    return Platform(
        accelerators=(Accelerator(vendor="google", index=0, name="TPU", extra={"fake": True}),)
    )


@hookimpl
def inferx_container_fixes():
    return ["not a Fix"]
"""


def _module(name: str, **hooks: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in hooks.items():
        setattr(module, key, value)
    return module


def _bad_plugin() -> types.ModuleType:
    namespace: dict[str, object] = {}
    exec(BAD_DETECTOR, namespace)
    return _module(
        "bad",
        inferx_platform=namespace["inferx_platform"],
        inferx_container_fixes=namespace["inferx_container_fixes"],
    )


def test_invalid_accelerator_and_wrong_answer_types_are_failures() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("bad", _bad_plugin())])
    failures = check_hooks(pm)
    by_hook = {f.hook: f for f in failures if f.plugin == "bad"}
    assert "ValidationError" in by_hook["inferx_platform"].error
    assert "extra.fake" in by_hook["inferx_platform"].error
    assert by_hook["inferx_container_fixes"].error == "returned items of type str, not Fix"
    assert len(failures) == len(set(failures))  # each once, though the hooks ran twice


def test_a_detector_answering_a_non_platform_is_a_failure() -> None:
    @hookimpl
    def inferx_platform():
        return {"accelerators": []}

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("dicty", _module("dicty", inferx_platform=inferx_platform))],
    )
    (failure,) = [f for f in check_hooks(pm) if f.plugin == "dicty"]
    assert failure.error == "returned dict, not Platform"


def test_strict_mode_collects_every_failure_then_raises() -> None:
    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": "", "INFERX_STRICT_PLUGINS": "1"},
        extra_plugins=[("bad", _bad_plugin())],
    )
    with pytest.raises(PluginError) as info:
        check_hooks(pm)
    message = str(info.value)
    assert "bad ((in-process)) in inferx_platform: ValidationError" in message
    assert "in inferx_container_fixes: returned items of type str" in message
    assert pm.strict  # restored


def test_good_plugins_pass_strict_check() -> None:
    @hookimpl
    def inferx_platform():
        return Platform(
            accelerators=(Accelerator(vendor="google", index=0, name="TPU", extra={"a": "b"}),)
        )

    pm = get_plugin_manager(
        env={"INFERX_STRICT_PLUGINS": "1"},
        extra_plugins=[("good", _module("good", inferx_platform=inferx_platform))],
    )
    assert check_hooks(pm) == []


@pytest.fixture
def bad_distribution(tmp_path: Path) -> Path:
    """An installed distribution (dist-info + module) whose detector is invalid."""
    (tmp_path / "bad_detector").mkdir()
    (tmp_path / "bad_detector/__init__.py").write_text(BAD_DETECTOR)
    info = tmp_path / "bad_detector-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-detector\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[inferx]\nbad = bad_detector\n")
    return tmp_path


def _inferx(path: Path, *args: str, strict: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path), "INFERX_STRICT_PLUGINS": "1" if strict else ""}
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_cli_plugins_strict_fails_and_names_the_detector(bad_distribution: Path) -> None:
    done = _inferx(bad_distribution, "plugins", strict=True)
    assert done.returncode != 0
    assert "bad (bad-detector) in inferx_platform: ValidationError" in done.stderr


def test_cli_plugins_lists_the_failure_without_strict(bad_distribution: Path) -> None:
    done = _inferx(bad_distribution, "plugins", "--json", strict=False)
    assert done.returncode == 0, done.stderr
    failures = json.loads(done.stdout)["hook_failures"]
    assert {(f["plugin"], f["hook"]) for f in failures} >= {
        ("bad", "inferx_platform"),
        ("bad", "inferx_container_fixes"),
    }


def _engine(**hooks: object) -> types.ModuleType:
    from inferx_core import EngineInfo

    @hookimpl
    def inferx_engines():
        return [EngineInfo(name="strict-engine", description="strict test engine")]

    return _module("eng", inferx_engines=inferx_engines, **hooks)


def test_engine_hooks_are_checked_for_a_placeholder_model() -> None:
    @hookimpl
    def inferx_engine_launch_spec(server, platform):
        return {"argv": ["serve"]}  # a dict, not a LaunchSpec

    @hookimpl
    def inferx_engine_metrics(server):
        raise KeyError("metrics table")

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[
            (
                "eng",
                _engine(
                    inferx_engine_launch_spec=inferx_engine_launch_spec,
                    inferx_engine_metrics=inferx_engine_metrics,
                ),
            )
        ],
    )
    by_hook = {f.hook: f.error for f in check_hooks(pm) if f.plugin == "eng"}
    assert by_hook["inferx_engine_launch_spec"].startswith("returned {'argv'")
    assert by_hook["inferx_engine_metrics"] == "KeyError: 'metrics table'"


def test_a_deliberate_refusal_is_not_a_failure() -> None:
    from inferx_core import UserFacingError

    @hookimpl
    def inferx_engine_launch_spec(server, platform):
        raise UserFacingError("strict-engine needs a TPU")

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": "", "INFERX_STRICT_PLUGINS": "1"},
        extra_plugins=[("eng", _engine(inferx_engine_launch_spec=inferx_engine_launch_spec))],
    )
    assert check_hooks(pm) == []


def test_a_non_platform_answer_becomes_a_note_not_a_crash() -> None:
    from inferx_core.sdk.registries import detect_platform

    @hookimpl
    def inferx_platform():
        return {"accelerators": []}

    pm = get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("dicty", _module("dicty", inferx_platform=inferx_platform))],
    )
    platform = detect_platform(pm)
    assert platform.host is not None
    assert any(n.source == "dicty" and "not Platform" in n.message for n in platform.notes)
