"""The `inferx` command: fast paths, schema, doctor, validate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferx_core import __version__
from inferx_core.cli.app import main


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_plugin_or_heavy_library(flag: str) -> None:
    code = (
        "import sys\n"
        "from inferx_core.cli.app import main\n"
        f"try:\n    main([{flag!r}])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('pydantic', 'rich', 'structlog', 'httpx', 'aiohttp', 'pynvml',\n"
        "         'inferx_vllm', 'inferx_sglang', 'inferx_rocm', 'tokenizers', 'numpy')\n"
        "         if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_version_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"inferx {__version__}"


def test_schema_is_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "RunConfig"
    assert {"engine", "model"} <= set(schema["required"])
    assert schema["additionalProperties"] is False
    assert main(["schema", "sweep"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "SweepConfig"


def test_doctor_json_on_this_machine() -> None:
    proc = run("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    host = report["platform"]["host"]
    assert host["cpu_logical_cores"] >= 1 and host["memory_total_mib"] > 0
    names = {e["name"] for e in report["engines"]}
    assert {"vllm", "sglang", "trtllm", "example-tpu"} <= names
    if report["gpu_count"] == 0:
        assert any("no NVIDIA GPU" in n["message"] for n in report["platform"]["notes"])
    for engine in report["engines"]:
        assert "fixes" in engine


def test_doctor_with_platform_file_shows_fix_reasons(tmp_path: Path) -> None:
    platform = {
        "accelerators": [
            {"vendor": "google", "index": 0, "name": "Google TPU", "arch": "tpu"},
        ]
    }
    path = tmp_path / "tpu.json"
    path.write_text(json.dumps(platform))
    proc = run("doctor", "--json", "--platform", str(path))
    assert proc.returncode == 0, proc.stderr
    engines = {e["name"]: e for e in json.loads(proc.stdout)["engines"]}
    fixes = {f["id"]: f for f in engines["example-tpu"]["fixes"]}
    assert fixes["example-tpu-megacore"]["applied"] is True
    assert "1 TPU chip" in fixes["example-tpu-megacore"]["reason"]
    vllm_fixes = {f["id"]: f for f in engines["vllm"]["fixes"]}
    assert vllm_fixes["example-tpu-megacore"]["applied"] is False


def test_bad_platform_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"accelerators": [{"vendor": "nvidia"}]}))
    proc = run("doctor", "--platform", str(path))
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "accelerators.0.index" in proc.stderr


def test_validate_reports_config_errors_with_field_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("engine: vllm\nmodel: m\nload:\n  concurrency: [1, 0]\n")
    proc = run("validate", str(bad))
    assert proc.returncode == 2
    assert "bad.yaml" in proc.stderr and "load" in proc.stderr and ">= 1" in proc.stderr
    good = tmp_path / "good.yaml"
    good.write_text("engine: vllm\nmodel: m\n")
    assert run("validate", str(good)).returncode == 0


def test_json_log_format_flag(tmp_path: Path) -> None:
    env = {**os.environ, "HF_TOKEN": "hf_should_not_leak"}
    proc = run("--log-format", "json", "plugins", "--json", env=env)
    assert proc.returncode == 0
    assert "hf_should_not_leak" not in proc.stdout + proc.stderr


@pytest.fixture
def handlers_kept():
    """The test process's signal handlers, put back after a test that lets the console
    entry set them."""
    import signal

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("how", ["returned", "raised"])
def test_a_run_ended_by_a_signal_keeps_its_exit_code_to_the_end(
    monkeypatch: pytest.MonkeyPatch, handlers_kept: None, how: str
) -> None:
    """The console entry: once a signal decided the exit (130), a further Ctrl-C during the
    interpreter's last moments is ignored (it made the process die by SIGINT: -2), and a
    KeyboardInterrupt from inside the CLI's own exit path still exits 130."""
    import signal

    import inferx_core.cli as entry
    import inferx_core.cli.app as app

    def interrupted(argv):
        if how == "raised":
            raise KeyboardInterrupt
        return 130

    monkeypatch.setattr(app, "main", interrupted)
    assert entry.main() == 130
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert signal.getsignal(sig) is signal.SIG_IGN


def test_in_process_calls_leave_the_callers_handlers(
    monkeypatch: pytest.MonkeyPatch, handlers_kept: None
) -> None:
    import signal

    import inferx_core.cli as entry
    import inferx_core.cli.app as app

    before = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(app, "main", lambda argv: 130)
    assert entry.main(["run", "x.yaml"]) == 130
    assert signal.getsignal(signal.SIGINT) is before
    monkeypatch.setattr(app, "main", lambda argv: 0)
    assert entry.main() == 0 and signal.getsignal(signal.SIGINT) is before  # not a signal
