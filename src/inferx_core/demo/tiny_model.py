"""Build a tiny, randomly initialised Llama model in Hugging Face format, offline.

Model hubs are never reachable from the benchmark hosts, yet a smoke run needs a
real engine serving a real model. :func:`build_tiny_model` writes one from
nothing: a byte-level BPE tokenizer trained with ``tokenizers`` on a synthetic
corpus generated here, a ``LlamaForCausalLM`` ``config.json`` and seeded random
weights in ``model.safetensors`` under the exact Hugging Face parameter names.
Only numpy, safetensors and tokenizers are used (no torch, no transformers).

The output is for exercising the serving path (tokenize, prefill, decode,
streaming, metrics), not for meaningful text: greedy decoding of random weights
produces arbitrary tokens, so always pair it with ``ignore_eos`` and
``max_tokens`` to control output length. ``lm_head`` rows of special tokens and
of lone non-ASCII bytes are zero, so greedy (temperature 0) output is printable
ASCII and every streamed chunk carries text; sampling at temperature > 0 can
still pick them (logit 0 sits mid-distribution) and yield empty-text chunks.

Builds are cached: ``dest`` carries a marker file with the builder version and
a hash of every parameter and of this module's source; a matching complete
build is returned untouched.
Writes are atomic (a temporary directory beside ``dest`` renamed into place),
so a crashed or concurrent build never leaves a half-written model behind.

Command line: ``python -m inferx_core.demo.tiny_model DEST [--seed N] [--overwrite]``.
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

#: Bump whenever the output of the builder changes for the same parameters.
BUILDER_VERSION = 1
#: Marker file written last into every complete build.
MARKER_NAME = ".inferx_tiny_model.json"

#: Special tokens, in id order (ids 0..3).
UNK_TOKEN = "<unk>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
PAD_TOKEN = "<pad>"
SPECIAL_TOKENS: tuple[str, ...] = (UNK_TOKEN, BOS_TOKEN, EOS_TOKEN, PAD_TOKEN)

#: Target tokenizer vocabulary (specials + 256 byte symbols + merges).
VOCAB_SIZE = 4096
#: Seed of the synthetic tokenizer corpus (independent of the weight seed).
CORPUS_SEED = 20240607
CORPUS_SENTENCES = 12_000
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

_COMMON_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "you",
    "that",
    "it",
    "he",
    "was",
    "for",
    "on",
    "are",
    "as",
    "with",
    "his",
    "they",
    "at",
    "be",
    "this",
    "have",
    "from",
    "or",
    "one",
    "had",
    "by",
    "word",
    "but",
    "not",
    "what",
    "all",
    "were",
    "we",
    "when",
    "your",
    "can",
    "said",
    "there",
    "use",
    "an",
    "each",
    "which",
    "she",
    "do",
    "how",
    "their",
    "if",
    "will",
    "up",
    "other",
    "about",
    "out",
    "many",
    "then",
    "them",
    "these",
    "so",
    "some",
    "her",
    "would",
    "make",
    "like",
    "him",
    "into",
    "time",
    "has",
    "look",
    "two",
    "more",
    "write",
    "go",
    "see",
    "number",
    "no",
    "way",
    "could",
    "people",
    "my",
    "than",
    "first",
    "water",
    "been",
    "call",
    "who",
    "oil",
    "its",
    "now",
    "find",
    "long",
    "down",
    "day",
    "did",
    "get",
    "come",
    "made",
    "may",
    "part",
    "model",
    "token",
    "request",
    "server",
    "latency",
    "throughput",
    "benchmark",
    "prompt",
    "answer",
    "question",
    "hello",
    "world",
    "please",
    "thank",
]
_ONSETS = ("", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z")
_ONSETS += ("br", "ch", "dr", "gl", "kr", "pl", "sh", "st", "th", "tr")
_NUCLEI = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "y")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng")


def _source_sha() -> str:
    """Hash of this module, so any edit to the builder invalidates cached builds."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _params(seed: int) -> dict[str, Any]:
    return {
        "builder_version": BUILDER_VERSION,
        "builder_source_sha256": _source_sha(),
        "seed": int(seed),
        "vocab_size": VOCAB_SIZE,
        "corpus_seed": CORPUS_SEED,
        "corpus_sentences": CORPUS_SENTENCES,
        "weight_std": WEIGHT_STD,
        "dims": MODEL_DIMS,
        "special_tokens": list(SPECIAL_TOKENS),
        "chat_template": CHAT_TEMPLATE,
    }


def params_hash(seed: int = 0) -> str:
    """SHA-256 of the canonical JSON of every input that shapes the build."""
    blob = json.dumps(_params(seed), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def synthetic_corpus(n_sentences: int = CORPUS_SENTENCES, seed: int = CORPUS_SEED) -> list[str]:
    """Deterministic pseudo-text: Zipf-weighted made-up words, English fillers, numbers."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n_made_up = 3000
    syllables = [o + n + c for o in _ONSETS for n in _NUCLEI for c in _CODAS]
    counts = rng.integers(1, 4, size=n_made_up, endpoint=True)
    made_up = ["".join(rng.choice(syllables, size=int(k))) for k in counts]
    words = list(_COMMON_WORDS) + made_up
    weights = 1.0 / np.arange(1, len(words) + 1) ** 1.05
    weights /= weights.sum()
    lengths = rng.integers(4, 16, size=n_sentences, endpoint=True)
    picks = rng.choice(len(words), size=int(lengths.sum()), p=weights)
    ends = rng.choice([".", ".", ".", "?", "!", ":", ";"], size=n_sentences)
    numbers = rng.integers(0, 100_000, size=n_sentences)
    has_number = rng.random(n_sentences) < 0.2
    has_comma = rng.random(n_sentences) < 0.3
    sentences: list[str] = []
    pos = 0
    for i, n in enumerate(lengths):
        toks = [words[j] for j in picks[pos : pos + n]]
        pos += int(n)
        if has_comma[i] and n > 4:
            toks[int(n) // 2] += ","
        if has_number[i]:
            toks.insert(1, str(int(numbers[i])))
        toks[0] = toks[0].capitalize()
        sentences.append(" ".join(toks) + str(ends[i]))
    return sentences


def _build_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(synthetic_corpus(), trainer=trainer)
    bos_id = tok.token_to_id(BOS_TOKEN)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
        special_tokens=[(BOS_TOKEN, bos_id)],
    )
    return tok


def printable_token_mask(tok: Any) -> np.ndarray:
    """True for ids whose text alone is non-empty printable ASCII (or tab/newline).

    False for special tokens (skipped when decoding) and for the lone bytes
    ``>= 0x80`` of the byte-level alphabet, which decode to nothing until a
    UTF-8 sequence completes.
    """
    ok = set(map(chr, range(0x20, 0x7F))) | {"\n", "\t"}
    n = tok.get_vocab_size(with_added_tokens=True)
    texts = [tok.decode([i], skip_special_tokens=True) for i in range(n)]
    return np.array([bool(t) and set(t) <= ok for t in texts], dtype=bool)


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


def _write_model(out: Path, seed: int) -> None:
    from safetensors.numpy import save_file

    tok = _build_tokenizer()
    tok.save(str(out / "tokenizer.json"))
    ids = {name: tok.token_to_id(name) for name in SPECIAL_TOKENS}
    vocab = tok.get_vocab_size(with_added_tokens=True)

    dims = MODEL_DIMS
    config: dict[str, Any] = {
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
    _write_json(out / "config.json", config)
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
            "model_max_length": dims["max_position_embeddings"],
            "add_bos_token": True,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    tensors = _weights(config, seed, printable_token_mask(tok))
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    _write_json(
        out / MARKER_NAME,
        {
            "builder_version": BUILDER_VERSION,
            "params_hash": params_hash(seed),
            "params": _params(seed),
            "files": list(MODEL_FILES),
        },
    )


def _read_marker(dest: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((dest / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def is_cached(dest: Path, *, seed: int = 0) -> bool:
    """True when ``dest`` holds a complete build of this builder version and ``seed``."""
    dest = Path(dest)
    marker = _read_marker(dest)
    if marker is None:
        return False
    return (
        marker.get("builder_version") == BUILDER_VERSION
        and marker.get("params_hash") == params_hash(seed)
        and all((dest / name).is_file() for name in MODEL_FILES)
    )


def build_tiny_model(dest: Path, *, seed: int = 0, overwrite: bool = False) -> Path:
    """Write a tiny random ``LlamaForCausalLM`` (HF format) to ``dest``; return ``dest``.

    Returns at once when ``dest`` already holds a complete build with the same
    builder version and parameters. A stale build by this builder (other seed
    or version) is replaced. Any other existing non-empty ``dest`` raises
    :class:`FileExistsError` unless ``overwrite`` is true. Build time is about a
    second; the model is ~10 MB (float32).
    """
    dest = Path(dest).absolute()
    if not overwrite and is_cached(dest, seed=seed):
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
        _write_model(tmp, seed)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        for f in tmp.iterdir():
            os.chmod(f, 0o644)  # safetensors writes 0600
        for _ in range(3):
            if dest.is_dir() and not dest.is_symlink():
                if not overwrite and is_cached(dest, seed=seed):
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
    parser.add_argument("--overwrite", action="store_true", help="replace any existing dest")
    args = parser.parse_args(argv)
    try:
        path = build_tiny_model(args.dest, seed=args.seed, overwrite=args.overwrite)
    except FileExistsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
