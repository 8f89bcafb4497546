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


# -- credentials inside URLs (issue 27) ---------------------------------------------------
userinfo_part = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#@'\"<>:"),
    min_size=1,
    max_size=20,
)
schemes = st.sampled_from(["http", "https", "postgresql", "postgres", "s3", "redis", "socks5h"])


@given(scheme=schemes, user=userinfo_part, password=userinfo_part)
def test_the_userinfo_of_any_url_is_masked_in_free_text(
    scheme: str, user: str, password: str
) -> None:
    text = f"cannot reach {scheme}://U{user}:P{password}@db.example:5432/x (refused)"
    out = redact_text(text)
    assert out == f"cannot reach {scheme}://{REDACTED}@db.example:5432/x (refused)"
    assert redact({"url": f"{scheme}://T{user}@host/x"}) == {"url": f"{scheme}://***@host/x"}


def test_url_masking_stays_inside_one_url_and_one_json_string() -> None:
    compact = json.dumps(["http://host:8000", "mail me@example.com"], separators=(",", ":"))
    assert redact_text(compact) == compact  # a quote ends the URL
    assert redact_text("http://h/x?next=a@b and ftp://me:pw@h") == (
        "http://h/x?next=a@b and ftp://***@h"
    )
    # an unescaped '@' inside the password: the authority's last '@' ends the userinfo
    assert redact_text("http://u:p@ss@host:1/v1") == "http://***@host:1/v1"
    assert redact_text("see https://example.com/docs") == "see https://example.com/docs"


def test_url_credentials_in_any_config_field_become_secrets() -> None:
    from inferx_core.config.models import BenchConfig, RunConfig
    from inferx_core.config.secrets import scrub

    BenchConfig.model_validate({"base_url": "http://bench-user:Bpw-7hq2x@127.0.0.1:8000"})
    RunConfig.model_validate({
        "engine": "x", "model": "m",
        "engine_env": {"NCCL_DEBUG": "INFO"}, "extra_argv": ["--proxy", "http://px:Ppw%2F9k2@p:3128"],
    })  # fmt: skip
    # the password alone, wherever it turns up (a server's error, a log line)
    assert scrub("denied: Bpw-7hq2x") == f"denied: {REDACTED}"
    assert scrub("proxy said Ppw/9k2 and Ppw%2F9k2") == f"proxy said {REDACTED} and {REDACTED}"


def test_typed_data_keeps_every_field_whatever_its_name() -> None:
    from inferx_core.sdk.redact import redact_fields

    why = "no supported GPU (NVML unavailable)"
    data = {"joules_per_output_token": 1.5, "null_reasons": {"joules_per_total_token": why},
            "ok": True, "headers": {"Cookie": "c=1"}, "notes": ["HF_TOKEN=hf_abc"],
            "argv": ["serve", "--api-key", "k1"], "url": "http://u:p@h"}  # fmt: skip
    assert redact_fields(data) == {
        "joules_per_output_token": 1.5, "null_reasons": {"joules_per_total_token": why},
        "ok": True, "headers": {"Cookie": REDACTED}, "notes": [f"HF_TOKEN={REDACTED}"],
        "argv": ["serve", "--api-key", REDACTED], "url": f"http://{REDACTED}@h",
    }  # fmt: skip


fragments = st.sampled_from([
    "Authorization", "authorization", "Bearer ", ":", "=", " ", "\n", "\t", "TOKEN", "_token",
    "api_key", "Secret", "PASSWORD", "--api-key", "--hf-token", "--token", "http://", "://",
    "@", "/", "u:p", "x", "9", '"', "\\", "é", "sk-registered-4242",
])  # fmt: skip


@given(st.lists(st.one_of(fragments, st.text(max_size=4)), max_size=12).map("".join))
def test_the_quick_check_never_misses_what_redaction_would_change(text: str) -> None:
    from inferx_core.config.secrets import remember_secrets
    from inferx_core.sdk.redact import may_hold_secrets, redact_fields

    remember_secrets(["sk-registered-4242"])
    for data in ({"note": text}, {"argv": [text, text]}, {"env": {"K": text}}):
        if redact_fields(data) != data:
            compact = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            assert may_hold_secrets(compact), compact


def test_a_database_role_name_is_not_a_secret_but_a_token_user_is() -> None:
    """``postgresql://inferx@host/db`` names a role: registering "inferx" masked every
    ``inferx_version`` in every file written after it."""
    from inferx_core.config.secrets import url_credentials

    assert url_credentials("postgresql://inferx@127.0.0.1:5432/inferx") == []
    assert url_credentials("postgresql://inferx:s3cret-pw@h/db")[1:] == ["s3cret-pw", "s3cret-pw"]
    assert url_credentials("see https://ghp_token123@github.com/x") == ["ghp_token123"] * 2
    assert url_credentials("fhttps://notatoken@h") == []
