"""A real PostgreSQL server for the database tests, started by the tests themselves.

``postgres_server`` (session scope) finds Debian's server binaries
(``/usr/lib/postgresql/*/bin``, newest first, or ``INFERX_PG_BIN``), runs
``initdb`` into a fresh temporary folder with trust authentication, and
starts ``postgres`` with ``pg_ctl`` on a free port of 127.0.0.1 (its own
socket folder, fsync off: throwaway data). PostgreSQL refuses to run as
root, so when the tests are root the server runs as the unprivileged
``postgres`` account that Debian's package creates (``runuser -u postgres``),
in a folder owned by it; otherwise as the current user. At the end the server
is stopped (``pg_ctl stop -m fast``) and the folder removed.

When the binaries are missing and the tests run as root with apt-get (as CI
does), Debian's ``postgresql`` package is installed first. Each test gets its
own database (``db_url``), created on that server. Where
the binaries or psycopg are missing the PostgreSQL tests skip with the reason;
with ``INFERX_REQUIRE_POSTGRES=1`` (``.ci/run``) they fail instead.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_ENV = "INFERX_REQUIRE_POSTGRES"
SERVER_USER = "postgres"  # Debian's account for the server (only used when we are root)
START_TIMEOUT_S = 60


def _unavailable(why: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL unavailable: {why} ({REQUIRE_ENV}=1)")
    pytest.skip(f"PostgreSQL unavailable: {why}")


def pg_bin() -> Path | None:
    override = os.environ.get("INFERX_PG_BIN")
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates = (
        [override]
        if override
        else sorted(versions, key=lambda p: int(Path(p).parent.name), reverse=True)
    )
    for folder in candidates:
        if all(os.access(Path(folder) / tool, os.X_OK) for tool in ("initdb", "pg_ctl")):
            return Path(folder)
    return None


def _install() -> str | None:
    """Install Debian's postgresql (root with apt-get only); None when done, else why not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "not root with apt-get, so postgresql cannot be installed"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "-q", "update"], ["apt-get", "-y", "-q", "install", "postgresql"]):
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=900, check=False)  # fmt: skip
        if proc.returncode != 0:
            return f"`{' '.join(argv)}` failed: {proc.stderr[-800:]}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    port: int
    user: str
    as_user: list[str]  # the prefix that runs a command as the server's account
    bin: Path
    _names: itertools.count

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.as_user, *argv], capture_output=True, text=True, timeout=START_TIMEOUT_S
        )

    def new_database(self) -> str:
        import psycopg

        name = f"inferx_test_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {name}")
            con.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def _account() -> tuple[list[str], str] | None:
    """(command prefix, owner) to run the server as; None when no unprivileged account."""
    if os.geteuid() != 0:
        return [], pwd.getpwuid(os.geteuid()).pw_name
    runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        return None
    return ([runuser, "-u", SERVER_USER, "--"], SERVER_USER) if runuser else None


def _start(bin_dir: Path) -> PostgresServer:
    account = _account()
    if account is None:
        _unavailable(f"running as root and no {SERVER_USER!r} account with runuser to drop to")
    prefix, owner = account
    root = Path(tempfile.mkdtemp(prefix="inferx-pg-"))
    shutil.chown(root, user=owner)
    server = PostgresServer(root, _free_port(), "inferx", prefix, bin_dir, itertools.count())
    data, log = root / "data", root / "server.log"
    init = server.run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "inferx",
                      "-E", "UTF8", "--no-sync")  # fmt: skip
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"initdb failed: {init.stderr[-800:]}")
    options = f"-c listen_addresses=127.0.0.1 -p {server.port} -k {root} -c fsync=off"
    start = server.run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options,
                       "-w", "-t", str(START_TIMEOUT_S), "start")  # fmt: skip
    if start.returncode != 0:
        text = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"pg_ctl start failed: {start.stderr[-400:]} {text[-800:]}")
    return server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'inferx-core[postgres]')")
    bin_dir = pg_bin()
    if bin_dir is None and os.environ.get("INFERX_PG_BIN"):
        _unavailable(f"INFERX_PG_BIN={os.environ['INFERX_PG_BIN']} has no initdb/pg_ctl")
    if bin_dir is None and _install() is None:
        bin_dir = pg_bin()
    if bin_dir is None:
        _unavailable("no initdb/pg_ctl under /usr/lib/postgresql/*/bin (apt install postgresql)")
    assert bin_dir is not None
    server = _start(bin_dir)
    try:
        yield server
    finally:
        server.run(str(bin_dir / "pg_ctl"), "-D", str(server.root / "data"), "-m", "fast", "stop")
        shutil.rmtree(server.root, ignore_errors=True)


@pytest.fixture(params=["duckdb", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind: a DuckDB file, a database on the server."""
    if request.param == "duckdb":
        return str(tmp_path / "results.duckdb")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database()
