"""Secret redaction for logs and results: by name, by field, and by value.

- by name: a mapping entry whose key names a secret (``HF_TOKEN``,
  ``*_API_KEY``, ``*_ACCESS_KEY``, ``*_SECRET``, ``Authorization``, ``Cookie``...);
- by field: every value of an environment map (``env``, ``engine_env``) and
  of ``headers``, unless its name is on the allow-list of names known to hold
  no secret (:mod:`inferx_core.config.secrets`);
- by value: every secret value the configs registered is replaced wherever it
  appears in a string (an argv, an error message, a log line);
- in URLs: the userinfo of every URL (``http://user:pw@host`` ->
  ``http://***@host``), registered or not.

Applied by the log processor, before any LaunchSpec or config is written into
a result or a plan, by the result models themselves (:func:`redact_fields`, when
a result is built or read: every writer gets masked data), and (by value) by
every results writer again.
"""

from __future__ import annotations

import re
from typing import Any

from inferx_core.config.secrets import (
    REDACTED,
    holds_secret,
    is_public_env_name,
    is_public_header,
    scrub,
)

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


# In compact, lower-cased JSON text: anything the inline patterns, the argv rule or an
# environment or header map (non-empty) could change. Broader than they are (JSON escapes
# a newline as \n): a miss would be a secret kept, a false hit only costs the full walk.
# One regex per word, each starting with its literal: ~5x faster than one alternation.
_WORD_THEN_ASSIGN = tuple(
    re.compile(word + r"(?:\s|\\[nrt])*[=:]")
    for word in ("token", "api_key", "secret", "password", "authorization")
)
_LITERALS_IN_JSON = (
    "--api-key", "--hf-token", "--token",
    '"env":{"', '"engine_env":{"', '"environment":{"', '"headers":{"',
)  # fmt: skip


def may_hold_secrets(json_text: str) -> bool:
    """False only when :func:`redact_fields` would leave the data of this compact JSON
    (``model_dump_json()``) unchanged: the quick test before walking every string."""
    if holds_secret(json_text):
        return True
    low = json_text.lower()
    return any(s in low for s in _LITERALS_IN_JSON) or any(p.search(low) for p in _WORD_THEN_ASSIGN)


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
        return _redact_argv(value, [redact(v) for v in value])
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_fields(value: Any, *, key: str | None = None) -> Any:
    """:func:`redact` for typed data (a result's JSON), where names are a model's fields,
    not secret names: ``joules_per_output_token`` is a figure (or, in ``null_reasons``,
    the reason it is missing), so no value is replaced for its name alone. Every string
    is masked by value (registered secrets, inline tokens, URL credentials), environment
    and header maps by entry, and the value after a secret flag in an argv."""
    if isinstance(value, dict):
        if key in ENV_KEYS or key == "headers":
            return redact(value, key=key)
        return {k: redact_fields(v, key=str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return _redact_argv(value, [redact_fields(v) for v in value])
    return redact_text(value) if isinstance(value, str) else value


def _redact_argv(given: list[Any] | tuple[Any, ...], items: list[Any]) -> Any:
    """``items`` (``given`` redacted) with the value after a secret flag replaced."""
    for i in range(len(items) - 1):
        if isinstance(items[i], str) and items[i].lower() in ("--api-key", "--hf-token"):
            items[i + 1] = REDACTED
    return type(given)(items) if isinstance(given, tuple) else items


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
