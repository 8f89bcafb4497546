"""Where the database is, and the two engines behind one small connection interface.

- no ``--db``: ``INFERX_DB`` if set, else ``results.duckdb`` in the user's data
  folder (``$XDG_DATA_HOME/inferx``, default ``~/.local/share/inferx``);
- ``--db PATH`` (or ``duckdb:PATH``): an embedded DuckDB file, created on first use;
- ``--db postgresql://user@host:port/dbname`` (or ``postgres://``): a PostgreSQL
  server (psycopg 3: ``pip install 'inferx-core[postgres]'``).

Any other scheme (``s3://``, ``http://``, ``md:``, ``sqlite:``...) is refused
with the list above: DuckDB would fetch an extension from the network for it,
and InferX never reaches out. DuckDB connections are opened with extension
autoinstall and autoload off, so no path can download one either.

SQL is written once with ``?`` placeholders; the PostgreSQL connection turns
them into psycopg's ``%s``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from inferx_core.config.secrets import mask_url_credentials, remember_secrets, url_credentials
from inferx_core.errors import UserFacingError

__all__ = [
    "ENV_VAR",
    "SUPPORTED_URLS",
    "Connection",
    "check_url",
    "connect",
    "default_db_path",
    "describe_url",
    "resolve_url",
]

ENV_VAR = "INFERX_DB"
_PG_PREFIXES = ("postgresql://", "postgres://")
_DUCKDB_PREFIX = "duckdb:"
#: What ``--db`` accepts, as messages list it.
SUPPORTED_URLS = "a DuckDB file PATH (or duckdb:PATH), postgresql://... or postgres://..."
# "name:" at the start: a URL scheme, or a DuckDB extension prefix (md:, sqlite:, s3://)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# DuckDB must never fetch an extension from the network
_DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def default_db_path() -> Path:
    """``results.duckdb`` under the user's data folder (XDG)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "inferx" / "results.duckdb"


def resolve_url(given: str | None) -> str:
    """The database to use: the flag, else ``INFERX_DB``, else the default DuckDB file;
    refused (:func:`check_url`) when it names no database InferX supports."""
    if given:
        url, origin = given, "--db"
    elif os.environ.get(ENV_VAR):
        url, origin = os.environ[ENV_VAR], ENV_VAR
    else:
        return str(default_db_path())
    return check_url(url, origin)


def check_url(url: str, origin: str = "--db") -> str:
    """``url`` when it is a supported database (see the module doc), else a
    :class:`UserFacingError` naming ``origin`` and what is supported. Its credentials
    become secrets that every writer masks."""
    remember_secrets(url_credentials(url))
    if is_postgres(url):
        return url
    path = url.removeprefix(_DUCKDB_PREFIX)
    scheme = _SCHEME.match(path)
    if scheme and not (os.name == "nt" and len(scheme.group(1)) == 1):  # C:\ is a drive
        raise UserFacingError(
            f"{origin} {describe_url(url)}: unsupported scheme {scheme.group(1)!r}; give "
            f"{SUPPORTED_URLS} (InferX never downloads a database driver; a file whose name "
            "has ':' is written ./NAME)"
        )
    return url


def is_postgres(url: str) -> bool:
    return url.startswith(_PG_PREFIXES)


def describe_url(url: str) -> str:
    """The URL without its credentials, for messages (``postgresql://***@host/db``)."""
    return mask_url_credentials(url)


# Rows per INSERT: one statement of many rows is ~40x faster on DuckDB than executemany,
# and stays under PostgreSQL's 65535 parameters.
_PARAMS_PER_STATEMENT = 20_000


def insert_statements(
    table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str
) -> Iterator[tuple[str, list[Any]]]:
    """Multi-row ``INSERT ... ON CONFLICT (key) DO NOTHING`` statements for ``rows``."""
    group = "(" + ", ".join("?" * len(columns)) + ")"
    per = max(1, _PARAMS_PER_STATEMENT // max(1, len(columns)))
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    for i in range(0, len(rows), per):
        chunk = rows[i : i + per]
        sql = head + ", ".join([group] * len(chunk)) + f" ON CONFLICT ({key}) DO NOTHING"
        yield sql, [v for row in chunk for v in row]


class Connection(Protocol):
    kind: str

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...
    def insert_many(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str
    ) -> None: ...
    def transaction(self) -> contextlib.AbstractContextManager[None]: ...
    def table_exists(self, name: str) -> bool: ...
    def close(self) -> None: ...


class DuckDBConnection:
    kind = "duckdb"

    def __init__(self, path: Path) -> None:
        import duckdb

        path.parent.mkdir(parents=True, exist_ok=True)
        self._wal = path.with_name(path.name + ".wal")
        try:
            self._con = duckdb.connect(str(path), config=dict(_DUCKDB_CONFIG))
        except duckdb.Error as exc:  # locked by another process, not a database, ...
            raise UserFacingError(f"cannot open the DuckDB database {path}: {exc}") from None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._con.execute(sql, list(params)).fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._con.execute(sql, list(params))

    def insert_many(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str
    ) -> None:
        for sql, params in insert_statements(table, columns, rows, key):
            self.execute(sql, params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self._con.begin()
        try:
            yield
        except BaseException:
            self._con.rollback()
            raise
        self._con.commit()

    def table_exists(self, name: str) -> bool:
        rows = self.query("SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name])
        return bool(rows)

    def close(self) -> None:
        try:
            self._con.close()
        finally:
            _drop_empty_wal(self._wal)


def _drop_empty_wal(wal: Path) -> None:
    """A commit that cannot write its WAL (a full disk) makes DuckDB truncate the WAL
    back to 0 bytes, and a clean close leaves none: an empty WAL holds no transaction
    and would be a stray file beside the database, so it goes once DuckDB has let go.
    A WAL with content is the database's (committed, not yet checkpointed): kept."""
    with contextlib.suppress(OSError):  # gone already, or a folder we may not write
        if wal.stat().st_size == 0:
            wal.unlink()


class PostgresConnection:
    kind = "postgresql"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise UserFacingError(
                "a PostgreSQL --db needs psycopg: pip install 'inferx-core[postgres]'"
            ) from None
        try:
            self._con = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise UserFacingError(
                f"cannot connect to {describe_url(url)}: {str(exc).strip()}"
            ) from None

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._con.cursor() as cur:
            cur.execute(self._sql(sql), list(params))
            return cur.fetchall()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        with self._con.cursor() as cur:
            cur.execute(self._sql(sql), list(params))

    def insert_many(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], key: str
    ) -> None:
        for sql, params in insert_statements(table, columns, rows, key):
            self.execute(sql, params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with self._con.transaction():
            yield

    def table_exists(self, name: str) -> bool:
        rows = self.query(
            "SELECT 1 FROM information_schema.tables "
            "WHERE table_name = ? AND table_schema = current_schema()",
            [name],
        )
        return bool(rows)

    def close(self) -> None:
        self._con.close()


def connect(url: str) -> Connection:
    """A connection to the database ``url`` names (see the module doc)."""
    if is_postgres(check_url(url)):
        return PostgresConnection(url)
    return DuckDBConnection(Path(url.removeprefix(_DUCKDB_PREFIX)).expanduser())
