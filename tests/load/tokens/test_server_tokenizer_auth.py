"""The server's tokenize calls carry the API key, as the load requests do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from http_stub import serving

from inferx_core.load.tokens.counter import resolve_token_counter
from inferx_core.load.tokens.server_tokenizer import ServerTokenizer
from inferx_core.load.tokens.tokenizer import TokenizerError

KEY = "sk-tokenize-test"


class _AuthTokenizeHandler(BaseHTTPRequestHandler):
    """vLLM's /tokenize and /detokenize, answering 401 without the bearer key."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            self._reply(401, {"error": {"message": "unauthorized"}})
        elif self.path == "/tokenize":
            self._reply(200, {"tokens": [len(w) for w in body["prompt"].split()]})
        elif self.path == "/detokenize":
            self._reply(200, {"prompt": " ".join("x" * t for t in body["tokens"])})
        else:
            self._reply(404, {})

    def _reply(self, status: int, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def auth_server() -> Iterator[str]:
    with serving(_AuthTokenizeHandler) as url:
        yield f"{url}/v1"


def test_probe_with_the_key_counts_on_the_server(auth_server: str) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    with ServerTokenizer.probe(auth_server, "m", headers=headers) as tok:
        assert tok.count("aa bbb c") == 3
        assert tok.can_decode


def test_probe_without_the_key_is_refused(auth_server: str) -> None:
    with pytest.raises(TokenizerError, match="401"):
        ServerTokenizer.probe(auth_server, "m")


def test_the_counter_resolution_passes_the_key(auth_server: str) -> None:
    with_key = resolve_token_counter(
        auth_server, "m", None, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert with_key.counter.source == "server"
    without = resolve_token_counter(auth_server, "m", None)
    assert without.counter.source == "estimate"
    assert "401" in without.attempts[0].detail
