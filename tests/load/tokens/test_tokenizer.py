"""Token counters: local tokenizer.json, fake /tokenize servers, estimate, resolution."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tokenizer_fixtures import FakeTokenizeServer

from inferx_core.load.tokens.counter import EstimateCounter, resolve_token_counter
from inferx_core.load.tokens.server_tokenizer import ServerTokenizer, server_root
from inferx_core.load.tokens.tokenizer import (
    LocalTokenizer,
    TokenCounter,
    TokenizerError,
    is_tokenizer,
)

# --------------------------------------------------------------------------
# fixtures: the tokenizer file and a fake vLLM tokenize server (tokenizer_fixtures)


@pytest.fixture(scope="session")
def tok_file(hf_tok: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    hf_tok.save(str(p))
    return p


@pytest.fixture()
def vllm_server(hf_tok: Any) -> Iterator[FakeTokenizeServer]:
    srv = FakeTokenizeServer(hf_tok, "vllm")
    yield srv
    srv.close()


def _free_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


TEXTS = ["Hello world, 123 tokens!", "kalo mize 中文 ü", "", "a\nb\tc", "x" * 300]


# --------------------------------------------------------------------------
# local


def test_local_tokenizer_counts_match_library(hf_tok: Any, tok_file: Path) -> None:
    local = LocalTokenizer.from_file(tok_file)
    assert local.source == "local" and str(tok_file) in local.description
    assert isinstance(local, TokenCounter) and is_tokenizer(local)
    assert local.special_overhead == 1  # the BOS
    for t in TEXTS:
        assert local.count(t) == len(hf_tok.encode(t).ids)
        assert local.encode(t) == hf_tok.encode(t, add_special_tokens=False).ids
        assert local.decode(local.encode(t)) == t
    assert local.count_batch(TEXTS) == [local.count(t) for t in TEXTS]
    assert local.measure_batch(TEXTS) == [(local.count(t), local.encode(t)) for t in TEXTS]
    assert local.vocab_size == hf_tok.get_vocab_size(with_added_tokens=True)


def test_local_special_ids_and_candidates(tok_file: Path) -> None:
    local = LocalTokenizer.from_file(tok_file.parent)  # a model directory works too
    special = local.special_ids
    assert {0, 1, 2} <= special
    cand = local.candidate_ids()
    assert len(cand) > 0 and not (set(cand.tolist()) & special)
    assert local.candidate_pool != "not computed"


def test_local_ignores_truncation_in_file(hf_tok: Any, tmp_path: Path) -> None:
    hf_tok.enable_truncation(8)
    try:
        p = tmp_path / "tokenizer.json"
        hf_tok.save(str(p))
    finally:
        hf_tok.no_truncation()
    local = LocalTokenizer.from_file(p)
    assert local.count("x" * 300) == len(hf_tok.encode("x" * 300).ids) > 8


def test_local_bad_files(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match="no tokenizer file"):
        LocalTokenizer.from_file(tmp_path / "missing.json")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerError, match="cannot load"):
        LocalTokenizer.from_file(bad)


# --------------------------------------------------------------------------
# server


def test_server_root() -> None:
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("http://h:8000") == "http://h:8000"


@pytest.mark.parametrize("dialect", ["vllm", "llama.cpp"])
def test_server_probe_and_counts(hf_tok: Any, dialect: str) -> None:
    srv = FakeTokenizeServer(hf_tok, dialect)
    try:
        with ServerTokenizer.probe(srv.url + "/v1", "m") as tok:
            assert tok.dialect == dialect and tok.source == "server"
            assert is_tokenizer(tok) and tok.can_decode
            for t in TEXTS:
                assert tok.count(t) == len(hf_tok.encode(t).ids)
                assert tok.encode(t) == hf_tok.encode(t, add_special_tokens=False).ids
            assert tok.count_batch(TEXTS) == [len(hf_tok.encode(t).ids) for t in TEXTS]
            assert tok.decode_batch([tok.encode(t) for t in TEXTS]) == TEXTS
            assert tok.special_overhead == 1
            assert tok.measure_batch(TEXTS) == [(tok.count(t), tok.encode(t)) for t in TEXTS]
            assert hf_tok.token_to_id("<s>") in tok.special_ids
            cand = tok.candidate_ids()
            assert len(cand) > 0 and not (set(cand.tolist()) & tok.special_ids)
            if dialect == "vllm":
                assert tok.max_model_len == 4096
    finally:
        srv.close()


def test_server_batch_reuses_connections(vllm_server: FakeTokenizeServer) -> None:
    with ServerTokenizer.probe(vllm_server.url, "m", max_workers=4) as tok:
        before = vllm_server.requests
        counts = tok.count_batch([f"text number {i}" for i in range(200)])
        assert len(counts) == 200 and vllm_server.requests - before == 200
    # keep-alive: a handful of connections, not one per request
    assert len(vllm_server.peers) <= 4 + 3


def test_server_without_detokenize(hf_tok: Any) -> None:
    srv = FakeTokenizeServer(hf_tok, "vllm", detokenize=False)
    try:
        with ServerTokenizer.probe(srv.url) as tok:
            assert tok.count("hello") == len(hf_tok.encode("hello").ids)
            assert not tok.can_decode and not is_tokenizer(tok)
            assert "404" in (tok.decode_unavailable_reason or "")
            with pytest.raises(TokenizerError):
                tok.decode([5, 6])
    finally:
        srv.close()


def test_server_probe_failure_says_why() -> None:
    with pytest.raises(TokenizerError, match="no tokenize endpoint") as info:
        ServerTokenizer.probe(_free_port_url(), timeout=2)
    assert "vllm" in str(info.value) and "llama.cpp" in str(info.value)


# --------------------------------------------------------------------------
# estimate and resolution


def test_estimate_counter() -> None:
    est = EstimateCounter()
    assert est.source == "estimate" and "estimate" in est.description
    assert est.count("") == 0 and est.count("abcd") == 1 and est.count("abcde") == 2
    words = EstimateCounter("words")
    assert words.count("one two three") == 4  # ceil(3 * 1.3)
    assert isinstance(est, TokenCounter) and not is_tokenizer(est)
    with pytest.raises(ValueError):
        EstimateCounter("bytes")  # type: ignore[arg-type]


def test_resolve_prefers_server(vllm_server: FakeTokenizeServer, tok_file: Path) -> None:
    res = resolve_token_counter(vllm_server.url, "m", tok_file)
    try:
        assert res.source == "server" and [a.source for a in res.attempts] == ["server"]
        assert res.describe()["token_source"] == "server"
    finally:
        res.counter.close()  # type: ignore[attr-defined]


def test_resolve_falls_back_to_local_then_estimate(tok_file: Path, tmp_path: Path) -> None:
    dead = _free_port_url()
    res = resolve_token_counter(dead, "m", tok_file, timeout=2)
    assert res.source == "local"
    assert res.attempts[0].source == "server" and not res.attempts[0].ok
    assert "no tokenize endpoint" in res.attempts[0].detail

    res = resolve_token_counter(dead, "m", tmp_path / "nope.json", timeout=2)
    assert res.source == "estimate" and res.estimated
    assert [(a.source, a.ok) for a in res.attempts] == [
        ("server", False),
        ("local", False),
        ("estimate", True),
    ]
    assert "nope.json" in res.attempts[1].detail

    res = resolve_token_counter(None, None, None)
    assert res.source == "estimate"
    assert (
        "no server URL" in res.attempts[0].detail and "no tokenizer file" in res.attempts[1].detail
    )
