"""Which configured values are secrets, and the process-wide list of them (redaction by value).

Every value of ``engine_env``, of bench ``headers`` and every API key is a
secret unless its name is on an explicit allow-list of names known to carry
no secret (``CUDA_*``, ``NCCL_*``, ``VLLM_*`` that do not name a token, ...;
:func:`is_public_env_name`). The config models hand their secret values to
:func:`remember_secrets` when they are validated; every writer of results,
sidecars, logs, plans and batch scripts then replaces any of them, wherever
it appears, with ``***`` (:func:`scrub`). Values shorter than
:data:`MIN_SCRUB_CHARS`, and numbers, are hidden only in their own field:
replacing "1" everywhere would destroy the file.

Credentials inside a URL (``scheme://user:password@host``) are secrets in any
field: every config model registers them when it is validated
(:func:`url_credentials`), and :func:`scrub` also masks the userinfo of every
URL it sees (``http://***@host``), registered or not, so a short password is
hidden too.

This module sits in ``config`` (below ``sdk``) so the models can fill the
list; :mod:`inferx_core.sdk.redact` builds on it.
"""

from __future__ import annotations

import fnmatch
import json
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

REDACTED = "***"
#: A value this long or longer is also replaced wherever it appears in written text.
MIN_SCRUB_CHARS = 6

# A name that says it holds a secret is never public, whatever its prefix.
_SECRET_WORDS = re.compile(
    r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE", re.IGNORECASE
)

#: Environment variable names known to hold no secret (fnmatch patterns, upper case).
PUBLIC_ENV_PATTERNS: tuple[str, ...] = (
    "CUDA_*", "NCCL_*", "NVIDIA_*", "CUBLAS_*", "CUDNN_*", "TORCH_*", "TORCHINDUCTOR_*",
    "PYTORCH_*", "VLLM_*", "SGLANG_*", "TRTLLM_*", "TLLM_*", "TRITON_*", "FLASHINFER_*",
    "ROCM_*", "HIP_*", "HSA_*", "ROCR_*", "AMD_*", "MIOPEN_*", "RCCL_*", "UCX_*", "GLOO_*",
    "GPU_ARCHS", "GPU_MAX_HW_QUEUES", "AITER_*", "CK_*",
    "OMP_*", "MKL_*", "KMP_*", "OPENBLAS_*", "TOKENIZERS_PARALLELISM", "HF_HUB_OFFLINE",
    "HF_HUB_ENABLE_HF_TRANSFER", "HF_HUB_DISABLE_*", "HF_HOME", "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
    "PYTHONPATH", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME", "TMPDIR", "TZ", "LANG",
    "LC_*", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK", "NODE_RANK",
    "XDG_*", "INFERX_CONTAINER_MOUNTS",
)  # fmt: skip

#: HTTP headers known to hold no secret (lower case).
PUBLIC_HEADERS = frozenset(
    {"accept", "accept-encoding", "content-type", "user-agent", "x-request-id", "connection"}
)


_PUBLIC_NAMES: set[str] = set()  # added by configs' ``public_env`` (process-wide)


def remember_public_names(names: Iterable[str]) -> None:
    """Env names a config declared free of secrets (``public_env``); a secret word still wins."""
    _PUBLIC_NAMES.update(n.upper() for n in names)


def is_public_env_name(name: str) -> bool:
    """True when ``name`` is on the allow-list and does not name a secret (see module doc)."""
    upper = name.upper()
    if _SECRET_WORDS.search(upper):
        return False
    if upper in _PUBLIC_NAMES:
        return True
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in PUBLIC_ENV_PATTERNS)


def is_public_header(name: str) -> bool:
    return name.lower() in PUBLIC_HEADERS


def env_secret_values(env: Mapping[str, str]) -> list[str]:
    return [v for k, v in env.items() if v and not is_public_env_name(str(k))]


def header_secret_values(headers: Mapping[str, str]) -> list[str]:
    """Header values and, for ``Bearer x`` / ``Basic x``, the credential ``x`` alone."""
    out = []
    for name, value in headers.items():
        if value and not is_public_header(str(name)):
            out.append(value)
            scheme, _, credential = value.partition(" ")
            if credential and scheme.lower() in ("bearer", "basic", "token"):
                out.append(credential.strip())
    return out


# ://USERINFO@: the userinfo ends at the authority's last '@' and never spans a '/', '?', '#',
# whitespace or a quote, so it stays inside one URL and one JSON string; linear time.
_URL_USERINFO = re.compile(r"://([^\s/?#'\"<>]+)@")


def mask_url_credentials(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced: ``http://***@host``."""
    if "://" not in text or "@" not in text:  # the common case, without a regex scan
        return text
    return _URL_USERINFO.sub(f"://{REDACTED}@", text)


# Schemes whose userinfo without a password is a token (``https://TOKEN@host``); for
# a database (``postgresql://inferx@host/db``) it is a role name, which is no secret and
# would otherwise be masked in every file ("inferx_version").
_TOKEN_USER_SCHEMES = re.compile(r"(?i)(?<![a-z0-9+.-])(?:https?|wss?)://$")


def url_credentials(text: str) -> list[str]:
    """The credentials in the URLs of ``text``: each userinfo with a password whole, and
    the password (as written and percent-decoded); for HTTP(S) and WebSocket URLs the user
    alone when there is no password (then it is the token, as in ``https://TOKEN@host``)."""
    if "://" not in text or "@" not in text:
        return []
    out: list[str] = []
    for match in _URL_USERINFO.finditer(text):
        userinfo = match.group(1)
        user, _, password = userinfo.partition(":")
        if password:
            out += [userinfo, password, unquote(password)]
        elif _TOKEN_USER_SCHEMES.search(text, 0, match.start() + 3):
            out += [user, unquote(user)]
    return out


def url_credentials_in(values: Iterable[object]) -> list[str]:
    """:func:`url_credentials` of every string in ``values``, looking into lists and maps."""
    out: list[str] = []
    for value in values:
        if isinstance(value, str):
            out += url_credentials(value)
        elif isinstance(value, Mapping):
            out += url_credentials_in(value.keys())
            out += url_credentials_in(value.values())
        elif isinstance(value, list | tuple | set | frozenset):
            out += url_credentials_in(value)
    return out


def _scrubbable(value: str) -> bool:
    """Long enough, and not a number (replacing digits inside JSON numbers would break them)."""
    if len(value) < MIN_SCRUB_CHARS:
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


class _Secrets:
    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        new = {v for v in values if isinstance(v, str) and _scrubbable(v)}
        new |= {json.dumps(v)[1:-1] for v in new}  # as it appears inside a JSON string
        with self._lock:
            if new - self._values:
                self._values |= new
                # longest first: a secret containing another is replaced whole
                ordered = sorted(self._values, key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def values(self) -> list[str]:
        with self._lock:
            return sorted(self._values, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        text = text if pattern is None else pattern.sub(REDACTED, text)
        return mask_url_credentials(text)

    def found_in(self, text: str) -> bool:
        pattern = self._pattern
        return pattern is not None and pattern.search(text) is not None

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None


_SECRETS = _Secrets()


def remember_secrets(values: Iterable[str]) -> None:
    """Add values to the process-wide list every writer scrubs (idempotent)."""
    _SECRETS.add(values)


def scrub(text: str) -> str:
    """``text`` with every remembered secret value, and every URL's userinfo, replaced by
    ``***``."""
    return _SECRETS.scrub(text)


def holds_secret(text: str) -> bool:
    """True when :func:`scrub` would change ``text`` (or part of it): a remembered value or
    a URL's userinfo is in it. One search: cheaper than scrubbing to compare."""
    return _SECRETS.found_in(text) or ("://" in text and _URL_USERINFO.search(text) is not None)


def remembered_secrets() -> list[str]:
    """Every remembered value (JSON-escaped forms included), longest first: for a
    process that must scrub without importing InferX (the engine watchdog)."""
    return _SECRETS.values()


def forget_secrets() -> None:
    """Empty the list (tests)."""
    _SECRETS.clear()
