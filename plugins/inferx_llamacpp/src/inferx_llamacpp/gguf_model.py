"""A Hugging Face Llama directory written as one GGUF file, the format llama-server loads.

llama-server reads GGUF only, and no model hub is reachable from a benchmark
host, so the plugin converts a local ``LlamaForCausalLM`` directory
(``config.json``, ``model.safetensors``, ``tokenizer.json``,
``tokenizer_config.json``) itself: float32 tensors under llama.cpp's names,
the byte-level BPE tokenizer as llama.cpp's ``gpt2`` model with its merges
and the GPT-2 pre-tokenizer regex, the special-token ids and the chat
template. It is what llama.cpp's ``convert_hf_to_gguf.py`` writes for such a
model, without torch. InferX's demo model (``inferx demo``) is one such
directory.

Conversions are cached: the GGUF file's name carries a hash of the source
files, and it is written to a temporary file and renamed, so a crash or a
concurrent conversion never leaves half a model behind.

Command line: ``python -m inferx_llamacpp.gguf_model HF_DIR [--output FILE]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from inferx_core import UserFacingError

__all__ = [
    "CONVERTER_VERSION",
    "GgufConversionError",
    "convert",
    "gguf_path_for",
    "hf_config",
    "is_hf_llama",
    "not_llama_why",
]

#: Bump when the GGUF written for the same source changes.
CONVERTER_VERSION = 1
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
ARCH = "llama"
# llama.cpp's token types (gguf.TokenType): NORMAL, CONTROL.
TOKEN_NORMAL = 1
TOKEN_CONTROL = 3


class GgufConversionError(UserFacingError, ValueError):
    """A model directory this converter cannot write as GGUF (the message says why)."""


def hf_config(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The directory's ``config.json``; None where there is none. One that cannot be read
    is an error naming the file, the JSON error's line and column, and the fix: a typo in
    it must not pass for "not a Llama directory", which hid the error."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return None
    try:
        return _read_json(config, shown=str(config))
    except GgufConversionError as exc:
        raise GgufConversionError(
            f"{exc}: correct it there, or give llama.cpp a .gguf file instead"
        ) from None


def is_hf_llama(path: str | os.PathLike[str]) -> bool:
    """True for a local directory holding a Hugging Face ``LlamaForCausalLM``; a
    ``config.json`` that is no JSON object raises (:func:`hf_config`)."""
    config = hf_config(path)
    return config is not None and config.get("model_type") == ARCH


def not_llama_why(path: str | os.PathLike[str]) -> str:
    """Why the directory is no Hugging Face Llama directory, in words (a broken
    ``config.json`` raises, naming the error: :func:`hf_config`)."""
    config = hf_config(path)
    if config is None:
        return "it has no config.json"
    return f"its config.json has model_type {config.get('model_type')!r}, not {ARCH!r}"


def _source_hash(hf_dir: Path) -> str:
    digest = hashlib.sha256(f"inferx-llamacpp-gguf-{CONVERTER_VERSION}".encode())
    for name in SOURCE_FILES:
        path = hf_dir / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()[:16]


def gguf_path_for(hf_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str]) -> Path:
    """Where the GGUF of ``hf_dir`` lives in ``cache_dir`` (named by its sources' hash)."""
    hf_dir = Path(hf_dir).absolute()
    return Path(cache_dir) / f"{hf_dir.name}-{_source_hash(hf_dir)}-f32.gguf"


def convert(hf_dir: str | os.PathLike[str], output: str | os.PathLike[str]) -> Path:
    """Write ``hf_dir`` as a GGUF file at ``output`` (returned at once when it exists)."""
    hf_dir, output = Path(hf_dir).absolute(), Path(output).absolute()
    if output.is_file():
        return output
    missing = [name for name in SOURCE_FILES if not (hf_dir / name).is_file()]
    if missing or not is_hf_llama(hf_dir):
        why = f"missing {', '.join(missing)}" if missing else not_llama_why(hf_dir)
        raise GgufConversionError(
            f"model {hf_dir}: cannot write it as GGUF ({why}); give llama.cpp a .gguf file "
            "as model:, or a Hugging Face Llama directory"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{output.name}.", suffix=".tmp", dir=output.parent)
    os.close(fd)
    try:
        _write_naming_the_file(hf_dir, Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return output


def _write_naming_the_file(hf_dir: Path, output: Path) -> None:
    """:func:`_write`, whose every failure names the directory, and the file and field where
    it knows them (a bare KeyError 'hidden_size' told a user nothing)."""
    fix = "fix the file, or give llama.cpp a .gguf file as model:"
    try:
        _write(hf_dir, output)
    except GgufConversionError as exc:
        raise GgufConversionError(
            f"model {hf_dir}: cannot write it as GGUF: {exc}; {fix}"
        ) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OSError) as exc:
        what = (
            f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        )
        raise GgufConversionError(
            f"model {hf_dir}: cannot write it as GGUF ({what}); {fix}"
        ) from None


def _read_json(path: Path, shown: str | None = None) -> dict[str, Any]:
    """The JSON object in ``path`` (named ``shown``, else by its name in errors)."""
    name = shown or path.name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:  # where the typo is, as an editor shows it
        raise GgufConversionError(
            f"{name}: not readable JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except (OSError, ValueError) as exc:  # unreadable, or not UTF-8
        raise GgufConversionError(f"{name}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise GgufConversionError(f"{name}: expected a JSON object")
    return data


def _num(config: dict[str, Any], key: str, kind: type = int, default: Any = None) -> Any:
    """``config.json``'s ``key`` as a positive ``kind``; the error names the field."""
    value = config.get(key, default)
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, bool) or not number > 0:
        got = "missing" if value is None else repr(value)
        raise GgufConversionError(f"config.json: field {key!r} is {got}; a positive number")
    return number


def _write(hf_dir: Path, output: Path) -> None:
    import gguf  # the plugin's own dependency; only needed when converting

    config = _read_json(hf_dir / "config.json")
    tokenizer = _read_json(hf_dir / "tokenizer.json")
    tok_config = _read_json(hf_dir / "tokenizer_config.json")
    writer = gguf.GGUFWriter(str(output), ARCH)
    writer.add_name(hf_dir.name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    _add_hparams(writer, config)
    _add_tokenizer(writer, config, tokenizer, tok_config)
    for name, tensor in _tensors(hf_dir, config):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _head_dim(config: dict[str, Any]) -> int:
    if config.get("head_dim"):
        return int(_num(config, "head_dim"))
    return int(_num(config, "hidden_size") // _num(config, "num_attention_heads"))


def _add_hparams(writer: Any, config: dict[str, Any]) -> None:
    heads = _num(config, "num_attention_heads")
    writer.add_context_length(_num(config, "max_position_embeddings", default=2048))
    writer.add_embedding_length(_num(config, "hidden_size"))
    writer.add_block_count(_num(config, "num_hidden_layers"))
    writer.add_feed_forward_length(_num(config, "intermediate_size"))
    writer.add_head_count(heads)
    writer.add_head_count_kv(_num(config, "num_key_value_heads", default=heads))
    writer.add_layer_norm_rms_eps(_num(config, "rms_norm_eps", float, 1e-5))
    writer.add_rope_freq_base(_num(config, "rope_theta", float, 10000.0))
    writer.add_rope_dimension_count(_head_dim(config))
    writer.add_key_length(_head_dim(config))
    writer.add_value_length(_head_dim(config))
    writer.add_vocab_size(_num(config, "vocab_size"))


def _merges(model: dict[str, Any]) -> list[str]:
    # tokenizers >= 0.20 stores merges as pairs, older versions as "a b" strings
    return [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]


def _add_tokenizer(
    writer: Any, config: dict[str, Any], tokenizer: dict[str, Any], tok_config: dict[str, Any]
) -> None:
    model = tokenizer.get("model") or {}
    if model.get("type") != "BPE":
        raise GgufConversionError(
            f"tokenizer.json: model type {model.get('type')!r}; only byte-level BPE is converted"
        )
    if not isinstance(model.get("vocab"), dict):
        raise GgufConversionError("tokenizer.json: field model.vocab is missing or not a mapping")
    vocab: dict[str, int] = dict(model["vocab"])
    special = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    vocab.update(special)
    size = _num(config, "vocab_size")
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [TOKEN_CONTROL] * size  # ids the tokenizer never produces stay unused
    for text, token_id in vocab.items():
        if token_id < size:
            tokens[token_id] = text
            types[token_id] = TOKEN_CONTROL if text in special else TOKEN_NORMAL
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")  # the ByteLevel pre-tokenizer's GPT-2 regex
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(_merges(model))
    for key, adder in (
        ("bos_token_id", writer.add_bos_token_id),
        ("eos_token_id", writer.add_eos_token_id),
        ("pad_token_id", writer.add_pad_token_id),
    ):
        if isinstance(config.get(key), int):
            adder(config[key])
    writer.add_add_bos_token(bool(tok_config.get("add_bos_token", True)))
    writer.add_add_eos_token(bool(tok_config.get("add_eos_token", False)))
    if isinstance(tok_config.get("chat_template"), str):
        writer.add_chat_template(tok_config["chat_template"])


def _permute_rope(weights: Any, n_head: int) -> Any:
    """HF rotates the halves of each head; llama.cpp's Llama rotates interleaved pairs."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


_LAYER_NAMES = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_TOP_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def gguf_tensor_name(hf_name: str) -> str:
    """llama.cpp's name for a Hugging Face Llama parameter name."""
    if hf_name in _TOP_NAMES:
        return _TOP_NAMES[hf_name]
    parts = hf_name.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in _LAYER_NAMES:
        return f"blk.{parts[2]}.{_LAYER_NAMES[parts[3]]}"
    raise GgufConversionError(f"model.safetensors: parameter {hf_name!r} is not a Llama one")


def _tensors(hf_dir: Path, config: dict[str, Any]) -> list[tuple[str, Any]]:
    import numpy as np
    from safetensors.numpy import load_file

    n_head = int(config["num_attention_heads"])
    n_kv = int(config.get("num_key_value_heads", n_head))
    out = []
    try:
        weights = load_file(str(hf_dir / "model.safetensors"))
    except Exception as exc:  # safetensors raises its own SafetensorError (no common base)
        raise GgufConversionError(f"model.safetensors: not readable ({exc})") from None
    for hf_name, tensor in sorted(weights.items()):
        array = np.ascontiguousarray(tensor, dtype=np.float32)
        if hf_name.endswith("self_attn.q_proj.weight"):
            array = _permute_rope(array, n_head)
        elif hf_name.endswith("self_attn.k_proj.weight"):
            array = _permute_rope(array, n_kv)
        out.append((gguf_tensor_name(hf_name), np.ascontiguousarray(array)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inferx_llamacpp.gguf_model",
        description="Write a Hugging Face Llama directory as one GGUF file (float32).",
    )
    parser.add_argument("hf_dir", type=Path)
    parser.add_argument("--output", type=Path, help="default: the plugin's cache")
    args = parser.parse_args(argv)
    from inferx_llamacpp.engine_paths import model_cache_dir

    output = args.output or gguf_path_for(args.hf_dir, model_cache_dir())
    try:
        print(convert(args.hf_dir, output))
    except UserFacingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
