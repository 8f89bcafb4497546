"""The server tokenizer speaks whatever the engine's plugin describes (hook
``inferx_engine_tokenize_endpoints``); the core assumes no engine's format."""

from __future__ import annotations

import types
from typing import Any

import pytest
from tokenizer_fixtures import FakeTokenizeServer

from inferx_core import EngineInfo, ServerConfig, TokenizeEndpoint, hookimpl
from inferx_core.load.tokens.counter import resolve_token_counter
from inferx_core.load.tokens.server_tokenizer import ServerTokenizer, engine_endpoints
from inferx_core.load.tokens.tokenizer import TokenizerError
from inferx_core.sdk.manager import get_plugin_manager
from inferx_llamacpp import launch as llamacpp_launch
from inferx_sglang import launch as sglang_launch
from inferx_vllm import launch as vllm_launch

#: An engine no plugin shipped with InferX knows: POST /v1/encode {"input", "bos"}
#: -> {"ids": [{"id", "text"}...], "ctx": N}; POST /v1/decode {"ids"} -> {"text"}.
ENCODE = TokenizeEndpoint(
    name="example",
    path="/v1/encode",
    text_field="input",
    add_special_field="bos",
    extra_body={"pieces": True},
    tokens_field="ids",
    token_id_field="id",
    max_model_len_field="ctx",
    detokenize_path="/v1/decode",
    detokenize_tokens_field="ids",
    detokenize_text_fields=("text",),
)


class ExampleServer(FakeTokenizeServer):
    """The /v1/encode format above, and nothing else."""

    def __init__(self, tok: Any) -> None:
        self.bodies: list[dict[str, Any]] = []
        super().__init__(tok, dialect="example")

    def handle(self, path: str, data: dict) -> tuple[int, Any]:
        self.bodies.append(data)
        if path == "/v1/encode" and data.get("pieces") is True:
            ids = self.tok.encode(data["input"], add_special_tokens=data["bos"]).ids
            return 200, {"ids": [{"id": i, "text": "?"} for i in ids], "ctx": 1234}
        if path == "/v1/decode":
            return 200, {"text": self.tok.decode(data["ids"], skip_special_tokens=False)}
        return 404, {"detail": "Not Found"}


def engine_plugin(engine: str, endpoints: list[TokenizeEndpoint] | None) -> types.ModuleType:
    module = types.ModuleType(f"{engine}_plugin")

    @hookimpl
    def inferx_engines() -> list[EngineInfo]:
        return [EngineInfo(name=engine, description=f"the {engine} engine")]

    @hookimpl
    def inferx_engine_tokenize_endpoints(server: ServerConfig | None) -> Any:
        return endpoints

    module.inferx_engines = inferx_engines  # type: ignore[attr-defined]
    module.inferx_engine_tokenize_endpoints = inferx_engine_tokenize_endpoints  # type: ignore[attr-defined]
    return module


def manager(*plugins: tuple[str, types.ModuleType]) -> Any:
    return get_plugin_manager(
        load_entry_points=False,
        builtins=False,
        extra_plugins=plugins,
        env={"INFERX_STRICT_PLUGINS": "1"},
    )


def test_a_format_the_core_never_saw_is_spoken_as_described(hf_tok: Any) -> None:
    pm = manager(("example", engine_plugin("example", [ENCODE])))
    srv = ExampleServer(hf_tok)
    try:
        server = ServerConfig(engine="example", model="m", port=1)
        res = resolve_token_counter(srv.url + "/v1", "m", None, server=server, pm=pm)
        tok = res.counter
        assert isinstance(tok, ServerTokenizer) and res.source == "server"
        assert tok.dialect == "example" and tok.endpoint == ENCODE
        assert "/v1/encode (example)" in tok.description
        text = "Hello world, the server counts"
        assert tok.encode(text) == hf_tok.encode(text, add_special_tokens=False).ids
        # a count is what the engine counts for a prompt: with its BOS ("bos": true)
        assert tok.count(text) == len(hf_tok.encode(text, add_special_tokens=True).ids)
        assert tok.can_decode and tok.decode(tok.encode(text)).strip() == text
        assert tok.max_model_len == 1234
        tokenize = [b for b in srv.bodies if "input" in b]
        # the fixed fields and "bos" are sent; no model field was described, so none is
        assert tokenize and all(b["pieces"] is True and "model" not in b for b in tokenize)
        tok.close()
    finally:
        srv.close()


def test_only_the_engines_own_plugin_is_asked() -> None:
    other = TokenizeEndpoint(name="other", path="/tok", text_field="t")
    pm = manager(
        ("example", engine_plugin("example", [ENCODE])),
        ("other", engine_plugin("other", [other])),
    )
    server = ServerConfig(engine="example", model="m", port=1)
    assert engine_endpoints(pm, server) == (ENCODE,)
    assert engine_endpoints(pm, server.model_copy(update={"engine": "other"})) == (other,)
    # engine unknown (bench without --engine): every plugin's, duplicates dropped
    twice = manager(
        ("example", engine_plugin("example", [ENCODE])),
        ("same", engine_plugin("same", [ENCODE, other])),
    )
    assert sorted(e.name for e in engine_endpoints(twice)) == ["example", "other"]


def test_without_a_described_endpoint_the_counter_falls_back_and_says_why(hf_tok: Any) -> None:
    pm = manager(("mute", engine_plugin("mute", None)))
    srv = FakeTokenizeServer(hf_tok, "vllm")  # serves vLLM's format, but nobody said so
    try:
        server = ServerConfig(engine="mute", model="m", port=1)
        res = resolve_token_counter(srv.url, "m", None, server=server, pm=pm)
        assert res.source == "estimate"
        assert "inferx_engine_tokenize_endpoints" in res.attempts[0].detail
        assert srv.requests == 0  # no format guessed
        with pytest.raises(TokenizerError, match="no engine plugin describes one"):
            ServerTokenizer.probe(srv.url, "m", endpoints=())
    finally:
        srv.close()


def test_probe_prefers_an_endpoint_that_also_decodes(hf_tok: Any) -> None:
    """vLLM and SGLang tokenize alike but reply to /detokenize with different keys."""
    srv = FakeTokenizeServer(hf_tok, "vllm")
    try:
        endpoints = [*sglang_launch.tokenize_endpoints(), *vllm_launch.tokenize_endpoints()]
        with ServerTokenizer.probe(srv.url, "m", endpoints=endpoints) as tok:
            assert tok.dialect == "vllm" and tok.can_decode
        with ServerTokenizer.probe(srv.url, "m", endpoints=endpoints[:1]) as tok:
            assert tok.dialect == "sglang" and not tok.can_decode  # counts, cannot decode
            assert "'text'" in (tok.decode_unavailable_reason or "")
    finally:
        srv.close()


@pytest.mark.parametrize(
    ("dialect", "endpoints"),
    [
        ("vllm", vllm_launch.tokenize_endpoints()),
        ("llama.cpp", [llamacpp_launch.TOKENIZE]),
    ],
)
def test_the_shipped_plugins_describe_their_engines(
    hf_tok: Any, dialect: str, endpoints: list[TokenizeEndpoint]
) -> None:
    srv = FakeTokenizeServer(hf_tok, dialect)
    try:
        with ServerTokenizer.probe(srv.url + "/v1", "m", endpoints=endpoints) as tok:
            assert tok.dialect == dialect and tok.can_decode
            text = "Tokens counted by the engine itself"
            assert tok.encode(text) == hf_tok.encode(text, add_special_tokens=False).ids
        # the other engine's description does not fit this server
        others = (
            [llamacpp_launch.TOKENIZE] if dialect == "vllm" else vllm_launch.tokenize_endpoints()
        )
        with pytest.raises(TokenizerError, match="no tokenize endpoint at"):
            ServerTokenizer.probe(srv.url, "m", endpoints=others)
    finally:
        srv.close()


def test_an_endpoint_description_is_checked() -> None:
    with pytest.raises(ValueError, match="starts with '/'"):
        TokenizeEndpoint(name="x", path="tokenize", text_field="t")
    with pytest.raises(ValueError, match="detokenize_text_fields"):
        TokenizeEndpoint(name="x", path="/t", text_field="t", detokenize_path="/d")
