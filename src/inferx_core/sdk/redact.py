"""Secret redaction for logs and results: by name, by field, and by value.

- by name: a mapping entry whose key names a secret (``HF_TOKEN``,
  ``*_API_KEY``, ``*_ACCESS_KEY``, ``*_SECRET``, ``Authorization``, ``Cookie``...);
- by field: every value of an environment map (``env``, ``engine_env``) and
  of ``headers``, unless its name is on the allow-list of names known to hold
  no secret (:mod:`inferx_core.config.secrets`);
- by value: every secret value the configs registered is replaced wherever it
  appears in a string (an argv, an error message, a log line).

Applied by the log processor, before any LaunchSpec or config is written into
a result or a plan, and (by value) by every results writer.
"""

from __future__ import annotations

import re
from typing import Any

from inferx_core.config.secrets import REDACTED, is_public_env_name, is_public_header, scrub

_SECRET_KEY = re.compile(
    r"(^|_)(TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$"
    r"|^(PROXY_)?AUTHORIZATION$|^(SET_)?COOKIE$|^HF_TOKEN$",
    re.IGNORECASE,
)
#: Keys whose value is an environment map: every value not on the allow-list is masked.
ENV_KEYS = frozenset({"env", "engine_env", "environment"})
# Secrets embedded in free text: "Authorization: Bearer x", "HF_TOKEN=x", "--api-key x".
_INLINE = [
    re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+|basic\s+)?([^\s,'\"]+)"),
    re.compile(r"(?i)\b([A-Z0-9_]*(?:TOKEN|API_KEY|SECRET|PASSWORD))(\s*[=:]\s*)([^\s,'\"]+)"),
    re.compile(r"(?i)(--(?:api-key|hf-token|token)(?:=|\s+))([^\s,'\"]+)"),
]


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key.replace("-", "_")))


def redact_text(text: str) -> str:
    text = scrub(text)
    text = _INLINE[0].sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{REDACTED}", text)
    text = _INLINE[1].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _INLINE[2].sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def redact(value: Any, *, key: str | None = None) -> Any:
    """Return a copy of ``value`` with secrets replaced, recursing into containers.

    A mapping entry whose key names a secret is replaced whole; strings are
    scanned for inline secrets; argv lists have the value after a secret flag
    replaced.
    """
    if key is not None and is_secret_key(key) and value not in (None, ""):
        return REDACTED
    if isinstance(value, dict) and key in ENV_KEYS:
        return _redact_env(value)
    if isinstance(value, dict) and key == "headers":
        return {k: v if is_public_header(str(k)) else _mask(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {k: redact(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [redact(v) for v in value]
        for i in range(len(items) - 1):
            if isinstance(items[i], str) and items[i].lower() in ("--api-key", "--hf-token"):
                items[i + 1] = REDACTED
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, str):
        return redact_text(value)
    return value


def _mask(value: Any) -> Any:
    return REDACTED if value not in (None, "") else value


def _redact_env(env: dict[Any, Any]) -> dict[Any, Any]:
    """An environment map (names -> strings) masked; a map of maps (a fix's ``env: {set:
    {...}}``) masked one level down."""
    if all(isinstance(v, str) or v is None for v in env.values()):
        return {k: v if is_public_env_name(str(k)) else _mask(v) for k, v in env.items()}
    return {
        k: _redact_env(v) if isinstance(v, dict) else redact(v, key=str(k)) for k, v in env.items()
    }
