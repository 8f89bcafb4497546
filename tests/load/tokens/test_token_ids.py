"""Token ids from a server's /tokenize are bounded: an id no int64 holds is a clear error
naming the reply, never an OverflowError traceback from numpy (issue 39 item 5)."""

from __future__ import annotations

import pytest

from inferx_core import TokenizeEndpoint
from inferx_core.errors import UserFacingError, user_error_message
from inferx_core.load.tokens.server_tokenizer import MAX_TOKEN_ID, _parse_tokens
from inferx_core.load.tokens.tokenizer import TokenizerError

URL = "http://h/tokenize"
EP = TokenizeEndpoint(name="vllm", path="/tokenize", text_field="prompt")


@pytest.mark.parametrize("bad", [2**64, 2**70, MAX_TOKEN_ID, -1])
def test_an_id_outside_int64_is_refused_with_its_reply_named(bad: int) -> None:
    with pytest.raises(TokenizerError, match=r"outside \[0, 2\*\*63\)") as caught:
        _parse_tokens(EP, {"tokens": [1, bad, 3]}, URL)
    assert URL in str(caught.value)
    assert isinstance(caught.value, UserFacingError)  # one line from the CLI
    assert user_error_message(caught.value) is not None


def test_ids_in_range_pass_through() -> None:
    assert _parse_tokens(EP, {"tokens": [0, MAX_TOKEN_ID - 1]}, URL) == [
        0,
        MAX_TOKEN_ID - 1,
    ]
