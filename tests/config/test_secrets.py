"""A value put in a secret-bearing field never appears in any file InferX writes (issue 15).

Secret-bearing: every ``engine_env`` value whose name is not on the
allow-list, every bench header (Cookie, Proxy-Authorization, ...), every API
key, and the credentials inside any URL (``http://user:password@host``, issue
27). Hypothesis picks the values; a bench against the scripted server (its
files, its ``--db`` database rows, its ``--export parquet`` tables, its console
output), a run of the fake engine, the log, ``inferx plan --json``,
``inferx validate --json`` and the SLURM batch script are then searched for them.
"""

from __future__ import annotations

import io
import json
import string
import time
from pathlib import Path

import fake_engine
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.config.models import RunConfig
from inferx_core.config.secrets import is_public_env_name
from inferx_core.executors.slurm import SlurmExecutor
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.log import configure_logging
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.sdk.redact import redact
from inferx_core.testing import ServerProcess

# Real secrets: printable, no whitespace, at least 8 characters and not a bare number.
# a marker prefix: a bare generated word ("shm_size") can be an honest field name in a file
secrets = st.text(
    alphabet=string.ascii_letters + string.digits + "-_./+=", min_size=8, max_size=40
).map(lambda s: f"Zq9{s}")
secrets = secrets.filter(lambda s: any(c.isalpha() for c in s))
# URL userinfo: the characters a user or password may hold unescaped
url_secrets = st.text(alphabet=string.ascii_letters + string.digits + "-_.~!$&*+,;=",
                      min_size=8, max_size=30).map(lambda s: f"Zq8{s}")  # fmt: skip
FEW = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # no shrinking: each example is a run
)


@pytest.fixture(scope="module")
def server():
    with ServerProcess() as srv:
        yield srv


def written_text(root: Path) -> dict[Path, str]:
    return {p: p.read_text(errors="replace") for p in root.rglob("*") if p.is_file()}


TABLES = "SELECT table_name FROM information_schema.tables"


def database_text(path: Path) -> str:
    """Every row of every table of a DuckDB file (its pages are compressed: read the rows)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(TABLES).fetchall()]
        return "\n".join(str(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)
    finally:
        con.close()


def parquet_texts(root: Path) -> dict[Path, str]:
    """Every row of every Parquet file under ``root`` (the files are compressed)."""
    import pyarrow.parquet as pq

    return {p: str(pq.read_table(p).to_pylist()) for p in root.rglob("*.parquet")}


def assert_nowhere(values: list[str], texts: dict[Path, str] | dict[str, str]) -> None:
    for where, text in texts.items():
        for value in values:
            assert value not in text, f"secret {value!r} in {where}"


def test_allow_list_is_explicit_and_never_covers_a_token_name() -> None:
    assert is_public_env_name("CUDA_VISIBLE_DEVICES") and is_public_env_name("NCCL_DEBUG")
    assert is_public_env_name("VLLM_CPU_KVCACHE_SPACE")
    for name in ("VLLM_API_KEY", "NCCL_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_SETTING", "HF_TOKEN"):
        assert not is_public_env_name(name), name


@FEW
@given(cookie=secrets, proxy=secrets, bearer=secrets, custom=secrets, user=url_secrets,
       password=url_secrets)  # fmt: skip
def test_bench_headers_and_url_credentials_never_reach_a_file_the_db_or_the_log(
    server: ServerProcess, tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str], cookie: str, proxy: str, bearer: str, custom: str,
    user: str, password: str,
) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("bench")
    headers = {"Cookie": f"session={cookie}", "Proxy-Authorization": f"Basic {proxy}",
               "Authorization": f"Bearer {bearer}", "X-Tenant": custom}  # fmt: skip
    base_url = server.base_url.replace("://", f"://{user}:{password}@")
    config = {"base_url": base_url, "headers": headers, "output_dir": str(root / "out"),
              "workload": {"isl": 8, "osl": 2}, "load": {"concurrency": [1], "num_prompts": 2},
              "telemetry": False}  # fmt: skip
    path = root / "bench.json"
    path.write_text(json.dumps(config))
    log = io.StringIO()
    configure_logging("json", "debug", stream=log)
    db = root / "db" / "results.duckdb"
    capsys.readouterr()
    try:
        argv = ["bench", str(path), "--no-progress", "--db", str(db), "--export", "parquet"]
        assert main(argv) in (0, 1)  # 1: "invalid" on a busy box
    finally:
        configure_logging()
    shown = capsys.readouterr()  # the summary table's title names the base URL
    path.unlink()  # the user's own config file holds them, of course
    texts = written_text(root)
    assert any(p.name.endswith(".requests.jsonl") for p in texts)
    tables = parquet_texts(root / "out")
    assert {p.name for p in tables} == {"points.parquet", "requests.parquet"}
    stored = database_text(db)
    assert "***@127.0.0.1" in stored  # the point is there, its base URL masked
    texts |= {"log": log.getvalue(), "stdout": shown.out, "stderr": shown.err, "database": stored}
    assert_nowhere([cookie, proxy, bearer, custom, user, password], {**texts, **tables})


def test_base_url_flag_credentials_never_reach_a_file_the_db_or_the_console(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same as ``base_url:`` in a config, given as ``--base-url`` on the command line."""
    user, password = "bench-user-7Qx", "pw-Zr81-never-written"
    base_url = server.base_url.replace("://", f"://{user}:{password}@")
    out, db = tmp_path / "out", tmp_path / "db" / "results.duckdb"
    argv = [
        "bench",
        "--base-url",
        base_url,
        "--isl",
        "8",
        "--osl",
        "2",
        "--concurrency",
        "1",
        "--num-prompts",
        "2",
        "--no-progress",
        "--no-telemetry",
        "--output",
        str(out),
        "--db",
        str(db),
        "--export",
        "parquet",
    ]
    capsys.readouterr()
    assert main(argv) in (0, 1)  # 1: "invalid" on a busy box
    shown = capsys.readouterr()
    texts: dict[str, str] = {str(p): t for p, t in written_text(tmp_path).items()}
    assert any(name.endswith(".requests.jsonl") for name in texts)
    stored = database_text(db)
    assert "***@127.0.0.1" in stored and "***@127.0.0.1" in shown.out
    tables = {str(p): t for p, t in parquet_texts(out).items()}
    texts |= {"stdout": shown.out, "stderr": shown.err, "database": stored, **tables}
    assert_nowhere([user, password], texts)


@FEW
@given(user=url_secrets, password=url_secrets)
def test_validate_shows_no_url_credentials(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], user: str,
    password: str,
) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("validate") / "bench.yaml"
    path.write_text(f"base_url: https://{user}:{password}@gpu-box:8000\nworkload: {{isl: 8}}\n")
    capsys.readouterr()
    for argv in (["validate", str(path), "--json"], ["validate", str(path)]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "https://***@gpu-box:8000" in out
        assert_nowhere([user, password], {"validate": out})


@FEW
@given(aws=secrets, plain=secrets, key=secrets)
def test_engine_env_never_reaches_results_sidecars_logs_plans_or_sbatch(
    tmp_path_factory: pytest.TempPathFactory, aws: str, plain: str, key: str
) -> None:
    root = tmp_path_factory.mktemp("run")
    cfg = RunConfig.model_validate({
        "engine": "fake", "model": "m", "plugin_options": {"mode": "ok"},
        "engine_env": {"AWS_SECRET_ACCESS_KEY": aws, "MY_SETTING": plain, "NCCL_DEBUG": "INFO"},
        "extra_argv": ["--api-key", key], "readiness_timeout_s": 30, "stop_grace_s": 5,
        "workload": {"isl": 8, "osl": 2}, "load": {"concurrency": [1], "num_prompts": 2},
        "output_dir": str(root / "out"),
    })  # fmt: skip
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    log = io.StringIO()
    configure_logging("console", "debug", stream=log)
    try:
        summary = run_configs([cfg], pm=pm, platform=Platform(), progress=False)
    finally:
        configure_logging()
    assert [o.status for o in summary.outcomes] != ["failed"]  # ok (or "invalid" on a busy box)
    from inferx_core.cli.run import plan

    plans = json.dumps(plan([cfg], pm, Platform()))
    view = SlurmExecutor({"gpus_per_node": 0}).describe([cfg], root / "slurm")
    scripts = "\n".join(job["script"] for job in view["jobs"])
    texts = {**written_text(root / "out"), "log": log.getvalue(), "plan": plans,
             "sbatch": scripts, "describe": json.dumps(view)}  # fmt: skip
    # engine.log included: scrubbed when the engine stops
    assert_nowhere([aws, plain, key], texts)
    result = json.loads(next((root / "out").glob("*.json")).read_text())
    assert result["provenance"]["config"]["engine_env"]["NCCL_DEBUG"] == "INFO"  # allow-listed


def test_a_secret_in_free_text_is_masked_by_value() -> None:
    RunConfig.model_validate({"engine": "x", "model": "m", "engine_env": {"DB_URL": "pg://u:pw9"}})
    message = "engine said: cannot reach pg://u:pw9 (refused)"
    assert "pw9" not in redact({"error": message})["error"]


def test_public_env_keeps_a_declared_value_but_never_a_secret_name() -> None:
    env = {"MY_MODE": "fast-path", "MY_TOKEN": "tok-123456"}
    RunConfig.model_validate(
        {"engine": "x", "model": "m", "public_env": ["MY_MODE", "MY_TOKEN"], "engine_env": env}
    )
    assert is_public_env_name("MY_MODE") and not is_public_env_name("MY_TOKEN")
    out = redact({"engine_env": {"MY_MODE": "fast-path", "MY_TOKEN": "tok-123456"}})
    assert out == {"engine_env": {"MY_MODE": "fast-path", "MY_TOKEN": "***"}}


def test_the_engine_log_is_scrubbed_when_the_engine_stops(tmp_path: Path) -> None:
    import sys

    from inferx_core.launch.process import ProcessLauncher, free_port
    from inferx_core.sdk.launch_spec import LaunchSpec

    secret = "sk-engine-printed-this-9f8e7d"
    RunConfig.model_validate({"engine": "x", "model": "m", "engine_env": {"MY_KEY": secret}})
    code = (
        "import os, time; print('args:', {'api_key': os.environ['MY_KEY']}, flush=True); "
        "time.sleep(60)"
    )
    spec = LaunchSpec(engine="x", argv=(sys.executable, "-c", code), env={"MY_KEY": secret},
                      port=free_port())  # fmt: skip
    handle = ProcessLauncher().start(spec, tmp_path)
    deadline = time.monotonic() + 20
    while "args:" not in handle.log_tail() and time.monotonic() < deadline:
        time.sleep(0.05)
    handle.stop(grace_s=1)
    log = (tmp_path / "engine.log").read_text()
    assert "args:" in log and secret not in log and "***" in log
