"""The plugin test kit catches each way a plugin breaks the contract (issue 19).

Each case installs a small distribution on a temporary sys.path entry
(dist-info + module), exactly as pip would, and runs one kit check on it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from inferx_core import Platform
from inferx_core.testing import plugin_kit

GOOD = """
from inferx_core import EngineInfo, LaunchSpec, hookimpl

@hookimpl
def inferx_engines():
    return [EngineInfo(name="kit-engine", description="kit test engine", default_port=9100)]

@hookimpl
def inferx_engine_launch_spec(server, platform):
    return LaunchSpec(engine="kit-engine", argv=("kit-serve", "--port", str(server.port)),
                      port=server.port)
"""


def _install(root: Path, monkeypatch: pytest.MonkeyPatch, source: str, *, readme: str = "") -> str:
    """A distribution 'kit-plugin' with entry point kit = kit_plugin; returns its name."""
    (root / "kit_plugin").mkdir()
    (root / "kit_plugin/__init__.py").write_text(textwrap.dedent(source))
    info = root / "kit_plugin-0.1.dist-info"
    info.mkdir()
    headers = (
        "Metadata-Version: 2.4\nName: kit-plugin\nVersion: 0.1\nSummary: a kit test plugin\n"
        "License-Expression: Apache-2.0\nProject-URL: Homepage, https://example.org\n"
    )
    (info / "METADATA").write_text(headers + ("\n" + readme if readme else ""))
    (info / "entry_points.txt").write_text("[inferx]\nkit = kit_plugin\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "kit_plugin", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(root))  # the fresh interpreter of the light check
    return "kit-plugin"


def test_a_good_plugin_passes_every_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = _install(tmp_path, monkeypatch, GOOD, readme="x" * 400)
    checked = plugin_kit.check_plugin(dist, [Platform()])
    assert checked == {"entry_points": ["kit"], "engines": ["kit-engine"], "fixes": []}


def test_a_heavy_import_at_load_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = _install(tmp_path, monkeypatch, "import xml.dom.minidom\n" + GOOD)
    with pytest.raises(AssertionError, match=r"imports xml\.dom\.minidom"):
        plugin_kit.check_entry_point_is_light(dist, heavy=("xml.dom.minidom",))


def test_an_engine_name_another_plugin_has_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = _install(tmp_path, monkeypatch, GOOD.replace('name="kit-engine"', 'name="vllm"'))
    with pytest.raises(AssertionError, match=r"engine names claimed twice: \{'vllm'"):
        plugin_kit.check_engines(dist, plugin_kit.get_plugin_manager(env={}))


def test_a_launch_spec_on_its_own_port_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = GOOD.replace("port=server.port)", "port=9999)")
    dist = _install(tmp_path, monkeypatch, source)
    with pytest.raises(AssertionError, match=r"LaunchSpec\.port 9999 is not server\.port 9100"):
        plugin_kit.check_launch_specs(dist, [Platform()])


def test_a_malformed_fix_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = (
        GOOD
        + """
from inferx_core import Fix, FixVerdict

@hookimpl
def inferx_container_fixes():
    return [Fix(id="Kit_Fix", title="t", symptom="s", condition_text="c", change_text="x",
                reference="r", condition=lambda ctx, spec: FixVerdict(True, "always"),
                change=lambda spec, ctx: spec)]
"""
    )
    dist = _install(tmp_path, monkeypatch, source)
    with pytest.raises(AssertionError, match="fix id 'Kit_Fix'"):
        plugin_kit.check_fixes(dist, [Platform()])


def test_a_condition_without_a_reason_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        GOOD
        + """
from inferx_core import Fix, FixVerdict

@hookimpl
def inferx_container_fixes():
    return [Fix(id="kit-fix", title="t", symptom="s", condition_text="c", change_text="x",
                reference="r", condition=lambda ctx, spec: FixVerdict(False, ""),
                change=lambda spec, ctx: spec)]
"""
    )
    dist = _install(tmp_path, monkeypatch, source)
    with pytest.raises(AssertionError, match="a verdict must say why"):
        plugin_kit.check_fixes(dist, [Platform()])


def test_no_long_description_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = _install(tmp_path, monkeypatch, GOOD)
    with pytest.raises(AssertionError, match="long description of 0 characters"):
        plugin_kit.check_docs(dist)


def test_a_failing_hook_fails_the_whole_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = (
        GOOD
        + """
from inferx_core import Accelerator, Platform

@hookimpl
def inferx_platform():
    return Platform(accelerators=(Accelerator(vendor="x", index=0, name="X", extra={"n": 1}),))
"""
    )
    dist = _install(tmp_path, monkeypatch, source, readme="x" * 400)
    with pytest.raises(Exception, match="inferx_platform"):
        plugin_kit.check_plugin(dist, [Platform()])
