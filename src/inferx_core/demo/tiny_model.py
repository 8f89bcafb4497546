"""Build a tiny, randomly initialised Llama model in Hugging Face format, offline.

Model hubs are never reachable from the benchmark hosts, yet a smoke run needs a
real engine serving a real model. :func:`build_tiny_model` writes one from
nothing: a byte-level BPE tokenizer trained with ``tokenizers`` on a synthetic
corpus (:mod:`inferx_core.demo.tiny_tokenizer`), a ``LlamaForCausalLM``
``config.json`` and seeded random weights in ``model.safetensors`` under the
exact Hugging Face parameter names.
Only numpy, safetensors and tokenizers are used (no torch, no transformers).

The output is for exercising the serving path (tokenize, prefill, decode,
streaming, metrics), not for meaningful text: greedy decoding of random weights
produces arbitrary tokens, so always pair it with ``ignore_eos`` and
``max_tokens`` to control output length. ``lm_head`` rows of special tokens and
of lone non-ASCII bytes are zero, so greedy (temperature 0) output is printable
ASCII and every streamed chunk carries text; sampling at temperature > 0 can
still pick them (logit 0 sits mid-distribution) and yield empty-text chunks.

Builds are cached: ``dest`` carries a marker file with the builder version and
a hash of every parameter and of the builder's source; a matching complete
build is returned untouched.
Writes are atomic (a temporary directory beside ``dest`` renamed into place),
so a crashed or concurrent build never leaves a half-written model behind.

``size`` picks the shape: ``tiny`` (the demo's: hidden 256, 2 layers, ~10 MB) or
``small`` (hidden 1024, 8 layers, ~410 MB), whose decode step on one CPU core is
tens of ms instead of the few ms of vLLM's own overhead, so a client's read
jitter is small against it (tests/e2e/test_audit_tools_e2e.py holds the tools'
latencies to InferX's on it).

Command line: ``python -m inferx_core.demo.tiny_model DEST [--seed N] [--size S] [--overwrite]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from inferx_core.demo import tiny_tokenizer
from inferx_core.demo.tiny_tokenizer import (
    BOS_TOKEN,
    CORPUS_SEED,
    CORPUS_SENTENCES,
    EOS_TOKEN,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    VOCAB_SIZE,
    build_tokenizer,
    printable_token_mask,
)

#: Bump whenever the output of the builder changes for the same parameters.
BUILDER_VERSION = 1
#: Marker file written last into every complete build.
MARKER_NAME = ".inferx_tiny_model.json"

WEIGHT_STD = 0.02

#: Model dimensions (``vocab_size`` is filled in from the trained tokenizer).
MODEL_DIMS: dict[str, Any] = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
}

#: The shapes by name: ``tiny`` is the demo's (its build unchanged by the option). ``small``
#: decoded one token in 17-25 ms on one core of this 2-core machine with vLLM CPU 0.32 held
#: to it (float32; 30-57 ms with the core shared at load average 3-5), against 4-10 ms for
#: ``tiny`` and 11-17 ms for hidden 768 / 6 layers.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": MODEL_DIMS,
    "small": MODEL_DIMS | {"hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8},
}

#: Jinja chat template: one line per turn, ``</s>`` closes each turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

MODEL_FILES: tuple[str, ...] = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
)


def _source_sha() -> str:
    """Hash of the builder's modules, so any edit to them invalidates cached builds."""
    digest = hashlib.sha256()
    for module_file in (__file__, tiny_tokenizer.__file__):
        digest.update(Path(module_file).read_bytes())
    return digest.hexdigest()


def _params(seed: int, size: str = "tiny") -> dict[str, Any]:
    return {
        "builder_version": BUILDER_VERSION,
        "builder_source_sha256": _source_sha(),
        "seed": int(seed),
        "vocab_size": VOCAB_SIZE,
        "corpus_seed": CORPUS_SEED,
        "corpus_sentences": CORPUS_SENTENCES,
        "weight_std": WEIGHT_STD,
        "dims": SIZES[size],
        "special_tokens": list(SPECIAL_TOKENS),
        "chat_template": CHAT_TEMPLATE,
    }


def params_hash(seed: int = 0, size: str = "tiny") -> str:
    """SHA-256 of the canonical JSON of every input that shapes the build."""
    blob = json.dumps(_params(seed, size), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def _weights(
    config: dict[str, Any], seed: int, emit_mask: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Seeded random tensors under the Hugging Face ``LlamaForCausalLM`` names.

    Rows of ``lm_head`` where ``emit_mask`` is false are zeroed: their logit is
    exactly 0 while the max over ~4k random logits is positive, so greedy
    decoding never emits them and every streamed chunk carries text.
    """
    rng = np.random.Generator(np.random.PCG64(seed))
    h = config["hidden_size"]
    inter = config["intermediate_size"]
    vocab = config["vocab_size"]
    head_dim = config["head_dim"]
    q_out = config["num_attention_heads"] * head_dim
    kv_out = config["num_key_value_heads"] * head_dim

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * WEIGHT_STD).astype(np.float32)

    out: dict[str, np.ndarray] = {"model.embed_tokens.weight": normal(vocab, h)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out[p + "self_attn.q_proj.weight"] = normal(q_out, h)
        out[p + "self_attn.k_proj.weight"] = normal(kv_out, h)
        out[p + "self_attn.v_proj.weight"] = normal(kv_out, h)
        out[p + "self_attn.o_proj.weight"] = normal(h, q_out)
        out[p + "mlp.gate_proj.weight"] = normal(inter, h)
        out[p + "mlp.up_proj.weight"] = normal(inter, h)
        out[p + "mlp.down_proj.weight"] = normal(h, inter)
        out[p + "input_layernorm.weight"] = np.ones(h, dtype=np.float32)
        out[p + "post_attention_layernorm.weight"] = np.ones(h, dtype=np.float32)
    out["model.norm.weight"] = np.ones(h, dtype=np.float32)
    lm_head = normal(vocab, h)
    if emit_mask is not None:
        lm_head[~emit_mask] = 0.0
    out["lm_head.weight"] = lm_head
    return out


def expected_weight_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Parameter name -> shape that a Llama checkpoint with ``config`` must have."""
    h = config["hidden_size"]
    inter = config["intermediate_size"]
    head_dim = config.get("head_dim") or h // config["num_attention_heads"]
    q_out = config["num_attention_heads"] * head_dim
    kv_out = config["num_key_value_heads"] * head_dim
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (config["vocab_size"], h)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "self_attn.q_proj.weight"] = (q_out, h)
        shapes[p + "self_attn.k_proj.weight"] = (kv_out, h)
        shapes[p + "self_attn.v_proj.weight"] = (kv_out, h)
        shapes[p + "self_attn.o_proj.weight"] = (h, q_out)
        shapes[p + "mlp.gate_proj.weight"] = (inter, h)
        shapes[p + "mlp.up_proj.weight"] = (inter, h)
        shapes[p + "mlp.down_proj.weight"] = (h, inter)
        shapes[p + "input_layernorm.weight"] = (h,)
        shapes[p + "post_attention_layernorm.weight"] = (h,)
    shapes["model.norm.weight"] = (h,)
    if not config.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = (config["vocab_size"], h)
    return shapes


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _model_config(ids: dict[str, int], vocab: int, dims: dict[str, Any]) -> dict[str, Any]:
    """The ``LlamaForCausalLM`` ``config.json`` for the trained tokenizer's ids."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab,
        "head_dim": dims["hidden_size"] // dims["num_attention_heads"],
        "hidden_act": "silu",
        "initializer_range": WEIGHT_STD,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "rope_scaling": None,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "bos_token_id": ids[BOS_TOKEN],
        "eos_token_id": ids[EOS_TOKEN],
        "pad_token_id": ids[PAD_TOKEN],
        **dims,
    }


def _write_tokenizer_configs(out: Path, ids: dict[str, int]) -> None:
    """generation_config.json, special_tokens_map.json and tokenizer_config.json."""
    _write_json(
        out / "generation_config.json",
        {
            "bos_token_id": ids[BOS_TOKEN],
            "eos_token_id": ids[EOS_TOKEN],
            "pad_token_id": ids[PAD_TOKEN],
        },
    )
    specials = {
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "unk_token": UNK_TOKEN,
        "pad_token": PAD_TOKEN,
    }
    _write_json(out / "special_tokens_map.json", specials)
    _write_json(
        out / "tokenizer_config.json",
        {
            **specials,
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": MODEL_DIMS["max_position_embeddings"],
            "add_bos_token": True,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "chat_template": CHAT_TEMPLATE,
        },
    )


def _write_model(out: Path, seed: int, size: str) -> None:
    from safetensors.numpy import save_file

    tok = build_tokenizer()
    tok.save(str(out / "tokenizer.json"))
    ids = {name: tok.token_to_id(name) for name in SPECIAL_TOKENS}
    config = _model_config(ids, tok.get_vocab_size(with_added_tokens=True), SIZES[size])
    _write_json(out / "config.json", config)
    _write_tokenizer_configs(out, ids)
    tensors = _weights(config, seed, printable_token_mask(tok))
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    _write_json(
        out / MARKER_NAME,
        {
            "builder_version": BUILDER_VERSION,
            "params_hash": params_hash(seed, size),
            "params": _params(seed, size),
            "files": list(MODEL_FILES),
        },
    )


def _read_marker(dest: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((dest / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def is_cached(dest: Path, *, seed: int = 0, size: str = "tiny") -> bool:
    """True when ``dest`` holds a complete build of this builder version, ``seed`` and
    ``size``."""
    dest = Path(dest)
    marker = _read_marker(dest)
    if marker is None:
        return False
    return (
        marker.get("builder_version") == BUILDER_VERSION
        and marker.get("params_hash") == params_hash(seed, size)
        and all((dest / name).is_file() for name in MODEL_FILES)
    )


def build_tiny_model(
    dest: Path, *, seed: int = 0, overwrite: bool = False, size: str = "tiny"
) -> Path:
    """Write a tiny random ``LlamaForCausalLM`` (HF format) to ``dest``; return ``dest``.

    Returns at once when ``dest`` already holds a complete build with the same
    builder version and parameters. A stale build by this builder (other seed
    or version) is replaced. Any other existing non-empty ``dest`` raises
    :class:`FileExistsError` unless ``overwrite`` is true. Build time is about a
    second; the model is ~10 MB (float32); ``size="small"``: ~4 s, ~410 MB.
    """
    if size not in SIZES:
        raise ValueError(f"size {size!r} is not one of {', '.join(SIZES)}")
    dest = Path(dest).absolute()
    if not overwrite and is_cached(dest, seed=seed, size=size):
        return dest
    if dest.exists():
        ours = _read_marker(dest) is not None
        empty = dest.is_dir() and not any(dest.iterdir())
        if not (overwrite or ours or empty):
            raise FileExistsError(
                f"{dest} exists and is not a tiny-model build; pass overwrite=True"
            )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        _write_model(tmp, seed, size)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        for f in tmp.iterdir():
            os.chmod(f, 0o644)  # safetensors writes 0600
        for _ in range(3):
            if dest.is_dir() and not dest.is_symlink():
                if not overwrite and is_cached(dest, seed=seed, size=size):
                    return dest  # a concurrent build finished first
                shutil.rmtree(dest)
            elif dest.exists() or dest.is_symlink():
                dest.unlink()
            try:
                os.rename(tmp, dest)
                return dest
            except OSError:
                continue  # lost a race with another writer: re-check
        raise OSError(f"could not move the built model into {dest}")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inferx_core.demo.tiny_model",
        description="Build a tiny random Llama model (HF format) offline.",
    )
    parser.add_argument("dest", type=Path, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--size", choices=list(SIZES), default="tiny", help="shape (default tiny)")
    parser.add_argument("--overwrite", action="store_true", help="replace any existing dest")
    args = parser.parse_args(argv)
    try:
        path = build_tiny_model(args.dest, seed=args.seed, overwrite=args.overwrite, size=args.size)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
