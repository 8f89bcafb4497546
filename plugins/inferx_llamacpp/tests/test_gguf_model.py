"""The demo's Hugging Face Llama directory written as GGUF: read back, every field as llama.cpp
expects it, cached by the sources' hash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core import UserFacingError
from inferx_llamacpp.gguf_model import (
    GgufConversionError,
    _permute_rope,
    convert,
    gguf_path_for,
    gguf_tensor_name,
)


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inferx_core.testing import build_tiny_model  # the model `inferx demo` serves

    return build_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")


@pytest.fixture(scope="module")
def gguf_file(hf_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return convert(hf_dir, gguf_path_for(hf_dir, tmp_path_factory.mktemp("gguf")))


def _field(reader: object, key: str) -> object:
    return reader.fields[key].contents()  # type: ignore[attr-defined]


def test_the_header_is_a_llama_with_the_models_dimensions(hf_dir: Path, gguf_file: Path) -> None:
    import gguf

    config = json.loads((hf_dir / "config.json").read_text())
    reader = gguf.GGUFReader(gguf_file)
    assert _field(reader, "general.architecture") == "llama"
    assert _field(reader, "llama.block_count") == config["num_hidden_layers"]
    assert _field(reader, "llama.embedding_length") == config["hidden_size"]
    assert _field(reader, "llama.attention.head_count_kv") == config["num_key_value_heads"]
    assert _field(reader, "llama.rope.dimension_count") == config["head_dim"]
    shapes = {t.name: tuple(int(d) for d in t.shape) for t in reader.tensors}
    assert len(shapes) == 2 + 9 * config["num_hidden_layers"] + 1
    # gguf lists dimensions innermost first
    assert shapes["token_embd.weight"] == (config["hidden_size"], config["vocab_size"])
    assert shapes["blk.1.attn_k.weight"] == (config["hidden_size"], 2 * config["head_dim"])


def test_the_tokenizer_is_byte_level_bpe_with_merges_specials_and_template(
    hf_dir: Path, gguf_file: Path
) -> None:
    import gguf

    tokenizer = json.loads((hf_dir / "tokenizer.json").read_text())
    tok_config = json.loads((hf_dir / "tokenizer_config.json").read_text())
    config = json.loads((hf_dir / "config.json").read_text())
    reader = gguf.GGUFReader(gguf_file)
    assert _field(reader, "tokenizer.ggml.model") == "gpt2"
    assert _field(reader, "tokenizer.ggml.pre") == "gpt-2"
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert len(tokens) == config["vocab_size"]
    for text, token_id in tokenizer["model"]["vocab"].items():
        assert tokens[token_id] == text
    assert len(_field(reader, "tokenizer.ggml.merges")) == len(tokenizer["model"]["merges"])
    assert _field(reader, "tokenizer.ggml.bos_token_id") == config["bos_token_id"]
    assert _field(reader, "tokenizer.ggml.eos_token_id") == config["eos_token_id"]
    types = _field(reader, "tokenizer.ggml.token_type")
    assert types[config["eos_token_id"]] == 3 and types[tokens.index("the")] == 1
    assert _field(reader, "tokenizer.chat_template") == tok_config["chat_template"]


def test_weights_are_the_models_own_with_q_and_k_in_llama_cpps_rope_order(
    hf_dir: Path, gguf_file: Path
) -> None:
    import gguf
    from safetensors.numpy import load_file

    hf = load_file(str(hf_dir / "model.safetensors"))
    tensors = {t.name: np.asarray(t.data) for t in gguf.GGUFReader(gguf_file).tensors}
    assert np.array_equal(tensors["output.weight"], hf["lm_head.weight"])
    assert np.array_equal(
        tensors["blk.0.attn_v.weight"], hf["model.layers.0.self_attn.v_proj.weight"]
    )
    q = hf["model.layers.0.self_attn.q_proj.weight"]
    assert np.array_equal(tensors["blk.0.attn_q.weight"], _permute_rope(q, 4))
    assert not np.array_equal(tensors["blk.0.attn_q.weight"], q)


@settings(max_examples=25, deadline=None)
@given(heads=st.integers(1, 8), half=st.integers(1, 8), cols=st.integers(1, 5))
def test_the_rope_permutation_interleaves_each_heads_halves(
    heads: int, half: int, cols: int
) -> None:
    rows = heads * 2 * half
    weights = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    permuted = _permute_rope(weights, heads)
    for h in range(heads):
        base = h * 2 * half
        for i in range(half):  # row i of the first half, then row i of the second
            assert np.array_equal(permuted[base + 2 * i], weights[base + i])
            assert np.array_equal(permuted[base + 2 * i + 1], weights[base + half + i])


def test_a_conversion_is_cached_and_a_changed_source_gets_a_new_file(
    hf_dir: Path, gguf_file: Path, tmp_path: Path
) -> None:
    stamp = gguf_file.stat().st_mtime_ns
    assert convert(hf_dir, gguf_file) == gguf_file and gguf_file.stat().st_mtime_ns == stamp
    copy = tmp_path / "tiny-llama"
    copy.mkdir()
    for f in hf_dir.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert gguf_path_for(copy, tmp_path).name == gguf_file.name  # same sources, same name
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "rope_theta": 5e5}))
    assert gguf_path_for(copy, tmp_path).name != gguf_file.name
    assert not [p for p in gguf_file.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_directory_that_is_not_a_llama_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"model_type": "mistral"}')
    with pytest.raises(GgufConversionError, match=r"missing model.safetensors") as raised:
        convert(tmp_path, tmp_path / "out.gguf")
    assert isinstance(raised.value, UserFacingError)
    assert not os.path.exists(tmp_path / "out.gguf")
    with pytest.raises(GgufConversionError, match=r"'model.layers.0.mlp.experts"):
        gguf_tensor_name("model.layers.0.mlp.experts")
