"""Fixtures for the load-generator tests: a scripted server in its own process, a tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tokenizer_fixtures import train_tokenizer

from inferx_core.load.prompts.payloads import (
    CHAT_PATH,
    COMPLETIONS_PATH,
    build_chat_payload,
    build_completions_payload,
)
from inferx_core.load.records.request import RequestRecord
from inferx_core.load.schedule.scheduler import PreparedRequest
from inferx_core.testing import ServerProcess


@pytest.fixture(scope="session")
def server() -> Iterator[ServerProcess]:
    """Zero-delay scripted server; tests set timing and failures per request (x_test)."""
    with ServerProcess() as srv:
        yield srv


@pytest.fixture(scope="session")
def hf_tok() -> Any:
    """The tiny BPE of tokenizer_fixtures (with a BOS), trained once per session."""
    return train_tokenizer()


MakeRequest = Callable[..., PreparedRequest]


@pytest.fixture
def make_request() -> MakeRequest:
    """``make_request(i=0, max_tokens=8, *, chat=False, **x_test) -> PreparedRequest``."""
    return _make_request


def _make_request(
    i: int = 0, max_tokens: int = 8, *, chat: bool = False, **x_test: Any
) -> PreparedRequest:
    """A prepared request whose server behaviour is scripted by ``x_test``."""
    extra = {"x_test": x_test} if x_test else None
    if chat:
        payload = build_chat_payload("test-model", "hello world", max_tokens, extra_body=extra)
        path = CHAT_PATH
    else:
        payload = build_completions_payload(
            "test-model", "hello world", max_tokens, extra_body=extra
        )
        path = COMPLETIONS_PATH
    return PreparedRequest(path, payload, RequestRecord(i, 2, max_tokens))
