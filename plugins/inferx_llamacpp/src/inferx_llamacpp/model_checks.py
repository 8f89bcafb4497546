"""What llama-server would refuse after loading for minutes, refused when the plan is made.

- the model (and a draft model): a local GGUF file. Missing, empty, a
  directory that is no Hugging Face Llama directory, something that is not a
  regular file (a FIFO would block whoever opened it), or a file that does not
  start with GGUF's magic bytes are each an error naming the field and the
  path. A value shaped like a hub id (``org/name``) that is no local path is
  passed on with a warning, as before: the error is llama-server's.
- the context: llama-server parses ``--ctx-size`` into a C ``int``, so
  ``max_model_len x slots`` above 2**31 - 1 is an error naming both fields.

Nothing is checked for a container launch (``image:``): the path is the
container's, not this machine's.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

from inferx_core import UserFacingError

__all__ = ["GGUF_MAGIC", "INT32_MAX", "check_gguf_file", "context_size", "looks_like_hub_id"]

#: The first four bytes of every GGUF file (ggml's GGUF_MAGIC).
GGUF_MAGIC = b"GGUF"
#: llama-server reads --ctx-size with std::stoi.
INT32_MAX = 2**31 - 1
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


def looks_like_hub_id(value: str) -> bool:
    """``org/name``: a hub id rather than a path (no leading ``/``, ``.`` or ``~``, no .gguf)."""
    return bool(_HUB_ID.match(value)) and not value.startswith((".", "~"))


def check_gguf_file(value: str, field: str) -> None:
    """Raise UserFacingError naming ``field`` unless ``value`` is a readable GGUF file."""
    path = Path(value).expanduser()
    fix = f"give {field} a .gguf file (or, for model:, a Hugging Face Llama directory)"
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if looks_like_hub_id(value) and not value.endswith(".gguf"):
            return  # a hub id: the plugin warns that llama-server loads a local file
        raise UserFacingError(f"{field} {value!r}: no such file; {fix}") from None
    except OSError as exc:
        raise UserFacingError(f"{field} {value!r}: cannot be read ({exc}); {fix}") from None
    if stat.S_ISDIR(mode):
        raise UserFacingError(
            f"{field} {value!r} is a directory that is not a Hugging Face Llama directory "
            f"(config.json with model_type llama): {_not_llama(path, field)}; {fix}"
        )
    if not stat.S_ISREG(mode):
        raise UserFacingError(f"{field} {value!r} is not a regular file (a FIFO or device); {fix}")
    if path.stat().st_size == 0:
        raise UserFacingError(f"{field} {value!r} is empty (0 bytes); {fix}")
    try:
        with path.open("rb") as handle:
            head = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise UserFacingError(f"{field} {value!r}: cannot be read ({exc}); {fix}") from None
    if head != GGUF_MAGIC:
        raise UserFacingError(
            f"{field} {value!r} is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r}); "
            f"{fix}"
        )


def _not_llama(path: Path, field: str) -> str:
    """Why the directory is no Llama directory; a broken config.json is its own error."""
    from inferx_llamacpp.gguf_model import GgufConversionError, not_llama_why

    try:
        return not_llama_why(path)
    except GgufConversionError as exc:  # a typo, not another kind of model: say where
        raise UserFacingError(f"{field} {str(path)!r}: {exc}") from None


def context_size(max_model_len: int, slots: int) -> int:
    """``--ctx-size``: each slot gets ``max_model_len``; more than a C int is an error."""
    total = max_model_len * slots
    if total > INT32_MAX:
        raise UserFacingError(
            f"max_model_len {max_model_len} x {slots} slots (max_num_seqs, else the load's "
            f"highest concurrency) = {total} tokens of context, more than llama-server's "
            f"--ctx-size takes ({INT32_MAX}); lower max_model_len or max_num_seqs"
        )
    return total
