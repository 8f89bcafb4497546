"""Secret redaction for logs and results: HF_TOKEN, *_API_KEY, *_TOKEN, Authorization.

Applied by the log processor and before any LaunchSpec or config is written
into a result, so a token never lands on disk or in a terminal.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***"

_SECRET_KEY = re.compile(
    r"(^|_)(TOKEN|API_KEY|APIKEY|SECRET|PASSWORD|PASSWD)$|^AUTHORIZATION$|^HF_TOKEN$",
    re.IGNORECASE,
)
# Secrets embedded in free text: "Authorization: Bearer x", "HF_TOKEN=x", "--api-key x".
_INLINE = [
    re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+|basic\s+)?([^\s,'\"]+)"),
    re.compile(r"(?i)\b([A-Z0-9_]*(?:TOKEN|API_KEY|SECRET|PASSWORD))(\s*[=:]\s*)([^\s,'\"]+)"),
    re.compile(r"(?i)(--(?:api-key|hf-token|token)(?:=|\s+))([^\s,'\"]+)"),
]


def is_secret_key(key: str) -> bool:
    return bool(_SECRET_KEY.search(key.replace("-", "_")))


def redact_text(text: str) -> str:
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
