"""The offline tiny-model builder: HF layout, tokenizer, weight shapes, caching."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from inferx_core.demo import tiny_model as tm


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tm.build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def _config(path: Path) -> dict:
    return json.loads((path / "config.json").read_text())


def test_layout_and_config(built: Path) -> None:
    for name in tm.MODEL_FILES:
        assert (built / name).is_file(), name
    cfg = _config(built)
    assert cfg["architectures"] == ["LlamaForCausalLM"]
    assert cfg["model_type"] == "llama"
    assert cfg["torch_dtype"] == "float32"
    assert cfg["tie_word_embeddings"] is False
    assert cfg["head_dim"] * cfg["num_attention_heads"] == cfg["hidden_size"]
    assert cfg["num_attention_heads"] % cfg["num_key_value_heads"] == 0
    assert cfg["max_position_embeddings"] >= 4096
    gen = json.loads((built / "generation_config.json").read_text())
    assert gen["eos_token_id"] == cfg["eos_token_id"]
    # No temp directories left beside the destination.
    assert [p.name for p in built.parent.iterdir()] == [built.name]


def test_tokenizer_loads_and_matches_config(built: Path) -> None:
    cfg = _config(built)
    tok = Tokenizer.from_file(str(built / "tokenizer.json"))
    assert tok.get_vocab_size(with_added_tokens=True) == cfg["vocab_size"]
    assert 2048 <= cfg["vocab_size"] <= 8192
    assert tok.token_to_id(tm.BOS_TOKEN) == cfg["bos_token_id"]
    assert tok.token_to_id(tm.EOS_TOKEN) == cfg["eos_token_id"]
    text = "Hello world, the benchmark latency is 12345 tokens!"
    enc = tok.encode(text)
    assert enc.ids[0] == cfg["bos_token_id"]  # BOS added like Llama
    assert len(enc.ids) < len(text) // 2  # real merges, not bytes
    assert tok.decode(enc.ids) == text
    assert tok.decode(tok.encode("żółw 🐢").ids) == "żółw 🐢"  # byte-level: no <unk>

    tcfg = json.loads((built / "tokenizer_config.json").read_text())
    assert tcfg["bos_token"] == tm.BOS_TOKEN and tcfg["eos_token"] == tm.EOS_TOKEN
    assert "messages" in tcfg["chat_template"] and "add_generation_prompt" in tcfg["chat_template"]
    smap = json.loads((built / "special_tokens_map.json").read_text())
    assert smap["eos_token"] == tm.EOS_TOKEN


def test_weight_names_and_shapes_match_config(built: Path) -> None:
    cfg = _config(built)
    weights = load_file(str(built / "model.safetensors"))
    expected = tm.expected_weight_shapes(cfg)
    assert set(weights) == set(expected)
    for name, arr in weights.items():
        assert arr.shape == expected[name], name
        assert arr.dtype == np.float32, name
    emb = weights["model.embed_tokens.weight"]
    assert 0.015 < float(emb.std()) < 0.025
    assert np.all(weights["model.norm.weight"] == 1.0)
    # Specials never win greedy decoding: their lm_head rows are zero.
    lm_head = weights["lm_head.weight"]
    for tid in (cfg["bos_token_id"], cfg["eos_token_id"], cfg["pad_token_id"]):
        assert not lm_head[tid].any()
    assert (np.abs(lm_head).sum(axis=1) > 0).mean() > 0.9


def test_rebuild_is_cache_hit(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in built.iterdir()}

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("cache miss: model was rebuilt")

    monkeypatch.setattr(tm, "_write_model", boom)
    assert tm.build_tiny_model(built, seed=0) == built
    assert tm.main([str(built)]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in built.iterdir()} == before
    assert tm.is_cached(built, seed=0)
    assert not tm.is_cached(built, seed=1)


def test_incomplete_build_is_not_cached(built: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in (tm.MARKER_NAME, "config.json"):
        (partial / name).write_bytes((built / name).read_bytes())
    assert not tm.is_cached(partial, seed=0)


def test_seeds_and_determinism(built: Path, tmp_path: Path) -> None:
    same = tm.build_tiny_model(tmp_path / "same", seed=0)
    for name in tm.MODEL_FILES:
        assert (same / name).read_bytes() == (built / name).read_bytes(), name

    # A foreign directory is refused unless overwrite=True.
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("not a model")
    with pytest.raises(FileExistsError):
        tm.build_tiny_model(other, seed=1)
    assert tm.build_tiny_model(other, seed=1, overwrite=True) == other.absolute()
    assert not (other / "keep.txt").exists()

    w0 = load_file(str(built / "model.safetensors"))
    w1 = load_file(str(other / "model.safetensors"))
    assert not np.array_equal(w0["model.embed_tokens.weight"], w1["model.embed_tokens.weight"])
    assert not np.array_equal(w0["lm_head.weight"], w1["lm_head.weight"])
    # The tokenizer does not depend on the weight seed.
    assert (other / "tokenizer.json").read_bytes() == (built / "tokenizer.json").read_bytes()


def test_the_default_size_is_the_demo_model(built: Path) -> None:
    """``size`` leaves the demo's build as it was: its config holds MODEL_DIMS and its
    marker names them (tiny is the default, and the same build)."""
    assert tm.SIZES["tiny"] == tm.MODEL_DIMS
    cfg = _config(built)
    assert {k: cfg[k] for k in tm.MODEL_DIMS} == tm.MODEL_DIMS
    marker = json.loads((built / tm.MARKER_NAME).read_text())
    assert marker["params"]["dims"] == tm.MODEL_DIMS
    assert tm.is_cached(built, seed=0, size="tiny") and not tm.is_cached(built, size="small")


def test_the_small_size_is_written_with_its_shape(tmp_path: Path, capsys) -> None:
    """``--size small`` (the e2e audit tests' engine model): the written config and
    weights have its dimensions, the tokenizer is the demo's, the marker tells it apart."""
    small = tmp_path / "small"
    assert tm.main([str(small), "--size", "small"]) == 0
    cfg = _config(small)
    assert {k: cfg[k] for k in tm.SIZES["small"]} == tm.SIZES["small"]
    assert (cfg["hidden_size"], cfg["num_hidden_layers"]) == (1024, 8)
    weights = load_file(str(small / "model.safetensors"))
    expected = tm.expected_weight_shapes(cfg)
    assert {k: v.shape for k, v in weights.items()} == expected
    assert tm.is_cached(small, size="small") and not tm.is_cached(small, size="tiny")
    with pytest.raises(ValueError, match="size 'huge' is not one of tiny, small"):
        tm.build_tiny_model(tmp_path / "huge", size="huge")
    assert not (tmp_path / "huge").exists()
