"""Secrets never reach logs or results."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st

from inferx_core.sdk.log import configure_logging, get_logger
from inferx_core.sdk.redact import REDACTED, redact, redact_text


def test_env_keys_are_redacted() -> None:
    env = {"HF_TOKEN": "hf_abc", "OPENAI_API_KEY": "sk-1", "MY_TOKEN": "t", "PATH": "/bin"}
    assert redact(env) == {
        "HF_TOKEN": REDACTED,
        "OPENAI_API_KEY": REDACTED,
        "MY_TOKEN": REDACTED,
        "PATH": "/bin",
    }


def test_inline_secrets_in_text_and_argv() -> None:
    text = "curl -H 'Authorization: Bearer sk-secret' HF_TOKEN=hf_x other=1"
    out = redact_text(text)
    assert "sk-secret" not in out and "hf_x" not in out and "other=1" in out
    argv = ["serve", "--api-key", "k123", "--port", "8000", "--hf-token=abc"]
    red = redact(argv)
    assert "k123" not in red and "--hf-token=abc" not in red and "8000" in red


def test_nested_structures() -> None:
    data = {"spec": {"env": {"HF_TOKEN": "x"}, "headers": {"Authorization": "Bearer y"}}}
    out = json.dumps(redact(data))
    assert '"x"' not in out and "Bearer y" not in out


# Real tokens are printable and contain no whitespace, quotes or commas (the separators).
token_text = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters=",'\"*"),
    min_size=4,
    max_size=30,
)


@given(token_text)
def test_any_token_value_is_hidden(secret: str) -> None:
    assert secret not in json.dumps(redact({"HF_TOKEN": secret}))
    assert secret not in redact_text(f"HF_TOKEN={secret}")
    assert secret not in redact_text(f"Authorization: Bearer {secret}")


def test_log_output_is_redacted_in_both_formats() -> None:
    for fmt in ("json", "console"):
        stream = io.StringIO()
        configure_logging(fmt, "info", stream=stream)
        get_logger("t").info(
            "launch", env={"HF_TOKEN": "hf_secret"}, cmd="x --api-key sk-live", port=8000
        )
        out = stream.getvalue()
        assert "hf_secret" not in out and "sk-live" not in out and "8000" in out
        if fmt == "json":
            assert json.loads(out)["env"]["HF_TOKEN"] == REDACTED
