"""Secrets are masked in the result and record models, before any writer (issue 27).

A server that echoes the API key (and a URL with credentials) back in its
errors: the results and records a run hands out are already masked, so the
database rows (``--db``) and the Parquet export written during the run hold no
secret even with every writer's own scrub switched off. And ``--db`` never
makes DuckDB reach the network: a scheme it does not support is refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from inferx_core.cli import main
from inferx_core.config.models import BenchConfig
from inferx_core.config.points import LoadPoint
from inferx_core.db.backends import SUPPORTED_URLS
from inferx_core.db.ingest import PointIngester
from inferx_core.db.store import open_db
from inferx_core.errors import UserFacingError
from inferx_core.interop.export import ExportOptions, PointExporter
from inferx_core.load.records.request import RequestRecord
from inferx_core.metrics.model import PointMetrics
from inferx_core.metrics.summarize import summarize
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.pipeline.point.assemble import (
    Measured,
    PointSource,
    measured_result,
    never_ran_result,
)
from inferx_core.results.model import parse_result
from inferx_core.testing import SSETestServer
from inferx_core.testing.server import ServerProtocol
from inferx_core.testing.stream import compact_json

API_KEY = "sk-echoed-by-the-server-8f3a1c"
URL_PASSWORD = "pw-in-a-url-77Qx"
SECRETS = (API_KEY, URL_PASSWORD)


class _EchoingProtocol(ServerProtocol):
    """Every other generation request fails with an error that quotes the caller's key
    and a URL with credentials (as a misconfigured proxy or gateway does)."""

    def _generate(self, body: dict[str, Any], *, chat: bool) -> None:
        server: _EchoingServer = self.server  # type: ignore[assignment]
        server.generated += 1
        if server.generated % 2:
            message = f"invalid API key {API_KEY}; upstream http://svc:{URL_PASSWORD}@10.0.0.9/v1"
            self._simple(401, compact_json({"error": {"message": message, "code": 401}}))
            return
        super()._generate(body, chat=chat)


class _EchoingServer(SSETestServer):
    generated = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _EchoingProtocol(self), self.host, self.port
        )
        self.port = self._server.sockets[0].getsockname()[1]


@pytest.fixture
def writers_do_not_scrub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch off every writer's own scrub: what they write is masked only if the
    results and records they were given already were."""
    import inferx_core.db.records
    import inferx_core.interop.tabular
    import inferx_core.results.files

    for module in (inferx_core.db.records, inferx_core.interop.tabular, inferx_core.results.files):
        monkeypatch.setattr(module, "scrub", lambda text: text)


TABLES = "SELECT table_name FROM information_schema.tables"


def database_text(path: Path) -> str:
    """Every row of every table of a DuckDB file, as text (the file itself is compressed)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [r[0] for r in con.execute(TABLES).fetchall()]
        return "\n".join(str(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)
    finally:
        con.close()


def parquet_text(folder: Path) -> str:
    import pyarrow.parquet as pq

    files = sorted(folder.rglob("*.parquet"))
    assert {p.name for p in files} >= {"points.parquet", "requests.parquet"}
    return "\n".join(str(pq.read_table(p).to_pylist()) for p in files)


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}"


def test_a_run_hands_masked_results_and_records_to_db_and_parquet(
    tmp_path: Path, writers_do_not_scrub: None
) -> None:
    db_path, out = tmp_path / "results.duckdb", tmp_path / "out"
    with _EchoingServer() as server:
        config = BenchConfig.model_validate({
            "base_url": f"http://bench:{URL_PASSWORD}@127.0.0.1:{server.port}",
            "api_key": API_KEY, "output_dir": str(out), "telemetry": False,
            "workload": {"isl": 8, "osl": 2}, "load": {"concurrency": [1], "num_prompts": 6},
        })  # fmt: skip
        exporter = PointExporter(ExportOptions(("parquet", "vllm"), out / "export"), [out])
        ingester = PointIngester(str(db_path), "t", then=exporter)
        outcomes = run_bench(config, on_point=ingester, progress=False)
    assert not ingester.errors and len(ingester.report.stored) == 1
    # the models themselves: what every writer (and any later one) receives
    result = outcomes[0].result
    assert_no_secret("the result", result.model_dump_json())
    samples = result.load.error_samples if result.load else []
    assert any("invalid API key ***" in (s.error or "") for s in samples), samples
    assert result.provenance.base_url == f"http://***@127.0.0.1:{server.port}"
    errors = [r.error for r in outcomes[0].records if r.error]
    assert errors and all("invalid API key ***" in e for e in errors)
    assert_no_secret("the records", json.dumps([r.to_json() for r in outcomes[0].records]))
    # what the writers made of them, with their own scrub off
    stored = database_text(db_path)
    assert "invalid API key ***" in stored
    assert_no_secret("the database", stored)
    assert_no_secret("the Parquet export", parquet_text(out / "export"))
    for path in out.rglob("*.json*"):
        assert_no_secret(str(path), path.read_text())


def _record(i: int, error: str | None) -> RequestRecord:
    base = 1_000_000 * i
    chunks = [] if error else [base + 10, base + 20]
    return RequestRecord(i, 8, 2, send_ns=base, chunk_ns=chunks, end_ns=base + 30,
                         error=error, error_kind="http_status" if error else None)  # fmt: skip


def test_a_result_masks_itself_when_built_read_or_copied(tmp_path: Path) -> None:
    from inferx_core.config.secrets import remember_secrets

    remember_secrets([API_KEY])
    echoed = f"401 invalid API key {API_KEY} for http://svc:{URL_PASSWORD}@10.0.0.9"
    records = [_record(0, echoed), _record(1, None), _record(2, None)]  # not masked here
    flat = summarize(records, window_start_ns=0, window_end_ns=3_000_000)
    point = LoadPoint(concurrency=1)
    source = PointSource("p1", point, base_url=f"http://u:{URL_PASSWORD}@h:1", context={
        "config": {"notes": echoed}})  # fmt: skip
    measured = Measured(PointMetrics.from_flat(flat), {"num_prompts": 3, "stopped_by":
                        "num_prompts"}, {}, {}, None, "2026-01-01T00:00:00+00:00")  # fmt: skip
    built = [
        measured_result(source, measured, "failed", f"engine said: {echoed}"),
        never_ran_result(source, echoed),
    ]
    for result in built:
        assert_no_secret("a built result", result.model_dump_json())
        assert result.provenance.base_url == "http://***@h:1"
    ok = built[0]
    assert "invalid API key ***" in json.dumps(ok.model_dump(mode="json")["load"])
    # read (a file another version wrote) and copied with a change: masked again
    raw = json.loads(built[1].model_dump_json())
    raw["failure_reason"] = echoed
    read = parse_result(raw)
    assert_no_secret("a read result", read.model_dump_json())
    copied = ok.model_copy(update={"failure_reason": echoed})
    assert_no_secret("a copied result", copied.model_dump_json())
    # the numbers under names that look like secrets stay numbers
    assert ok.throughput == built[0].throughput
    with open_db(str(tmp_path / "r.duckdb")) as db:
        db.ingest([read, copied])
    assert_no_secret("the database", database_text(tmp_path / "r.duckdb"))


@pytest.mark.parametrize(
    "url",
    ["s3://bucket/results.duckdb", "http://host/r.duckdb", "md:", "md:my_db",
     "gcs://bucket/r.duckdb", "duckdb:s3://bucket/r.duckdb", "sqlite:r.db", "results:old.duckdb"],
)  # fmt: skip
def test_unsupported_db_schemes_are_refused_before_duckdb_is_asked(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def no_duckdb(*_: object, **__: object) -> None:
        raise AssertionError("DuckDB was asked to open an unsupported URL")

    monkeypatch.setattr(duckdb, "connect", no_duckdb)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserFacingError, match=r"--db .*unsupported scheme"):
        open_db(url)
    assert main(["db", "list", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "--db" in err and SUPPORTED_URLS in err and "Traceback" not in err
    monkeypatch.setenv("INFERX_DB", url)
    with pytest.raises(UserFacingError, match="INFERX_DB"):
        open_db()
    assert not list(tmp_path.iterdir())  # nothing created


def test_unsupported_scheme_on_bench_db_fails_before_any_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["bench", "--base-url", "http://127.0.0.1:9", "--db", "md:", "--no-progress",
                 "--output", str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--db" in err and "unsupported scheme 'md'" in err


def test_duckdb_never_loads_or_installs_an_extension_by_itself(tmp_path: Path) -> None:
    with open_db(str(tmp_path / "r.duckdb")) as db:
        settings = db.con.query(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('autoinstall_known_extensions', 'autoload_known_extensions')"
        )
    assert sorted(settings) == [
        ("autoinstall_known_extensions", "false"),
        ("autoload_known_extensions", "false"),
    ]
    # a path with ':' after ./ is a plain file
    with open_db(str(tmp_path / "odd:name.duckdb")) as db:
        assert db.kind == "duckdb"
