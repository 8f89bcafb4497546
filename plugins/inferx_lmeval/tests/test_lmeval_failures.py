"""``inferx eval`` through the real lm-eval evaluator when lm-eval cannot run: missing, or its
interpreter crashing. Either is a failed evaluation (exit 1, ``infrastructure_success``
false), its whole error printed on its own lines; no lm-eval install is needed here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from inferx_lmeval import evaluator as lmeval_evaluator
from inferx_lmeval import hooks

from inferx_core import get_plugin_manager
from inferx_core.cli.app import main
from inferx_core.sdk import manager


@pytest.fixture(autouse=True)
def only_lmeval(monkeypatch: pytest.MonkeyPatch) -> None:
    pm = get_plugin_manager(
        load_entry_points=False, builtins=False, extra_plugins=[("lmeval", hooks)]
    )
    monkeypatch.setattr(manager, "get_plugin_manager", lambda *a, **k: pm)


def _eval(tmp_path: Path, *extra: str) -> list[str]:
    argv = ["eval", "--base-url", "http://127.0.0.1:9", "--model", "m", "--task", "gsm8k"]
    return [*argv, "--output", str(tmp_path / "out"), *extra]


def _accuracy(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "out" / "accuracy.json").read_text())["accuracy"]


def test_lm_eval_missing_exits_1_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(lmeval_evaluator, "find_lmeval_python", lambda explicit=None: None)
    assert main(_eval(tmp_path)) == 1
    err = capsys.readouterr().err
    assert "evaluation of gsm8k failed: RuntimeError: lm-eval is not installed" in err
    assert "make install" in err and "INFERX_LMEVAL_PYTHON" in err
    section = _accuracy(tmp_path)
    assert section["infrastructure_success"] is False and section["status"] == "error"


def test_a_crashing_harness_exits_1_and_prints_its_log_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crashing = tmp_path / "python"  # an "lm-eval interpreter" that dies with a traceback
    crashing.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):'\necho '  File \"x\", line 1'\n"
        "echo 'ImportError: lm_eval is broken'\nexit 3\n"
    )
    os.chmod(crashing, 0o755)
    assert main(_eval(tmp_path, "--evaluator-opt", f"python={crashing}")) == 1
    err = capsys.readouterr().err
    assert "lm-eval exited with code 3" in err
    assert 'Traceback (most recent call last):\n  File "x", line 1\n' in err
    assert "ImportError: lm_eval is broken" in err
    assert _accuracy(tmp_path)["infrastructure_success"] is False
