"""``speculative:`` as llama-server's ``--spec-*`` flags, or a refusal naming the field."""

from __future__ import annotations

import pytest

from inferx_core import ServerConfig, UserFacingError
from inferx_llamacpp.speculative import speculative_argv


def argv(**spec: object) -> list[str]:
    server = ServerConfig(engine="llamacpp", model="/m.gguf", speculative=spec)  # type: ignore[arg-type]
    return speculative_argv(server)


def test_no_speculative_no_flags() -> None:
    assert speculative_argv(ServerConfig(engine="llamacpp", model="/m.gguf")) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"method": "draft_model", "draft_model": "/d.gguf", "num_speculative_tokens": 5},
            [
                "--spec-type",
                "draft-simple",
                "--spec-draft-model",
                "/d.gguf",
                "--spec-draft-n-max",
                "5",
            ],
        ),
        (
            {"method": "eagle3", "draft_model": "/e.gguf", "num_speculative_tokens": 3},
            [
                "--spec-type",
                "draft-eagle3",
                "--spec-draft-model",
                "/e.gguf",
                "--spec-draft-n-max",
                "3",
            ],
        ),
        (
            {"method": "mtp", "num_speculative_tokens": 1},
            ["--spec-type", "draft-mtp", "--spec-draft-n-max", "1"],
        ),
        (
            {"method": "ngram", "num_speculative_tokens": 3},
            ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-m", "3"],
        ),
        (
            {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 2},
            [
                "--spec-type",
                "ngram-simple",
                "--spec-ngram-simple-size-m",
                "4",
                "--spec-ngram-simple-size-n",
                "2",
            ],
        ),
    ],
    ids=["draft_model", "eagle3", "mtp", "ngram", "ngram-lookup"],
)
def test_each_method_llama_server_runs_gets_its_flags(spec: dict, expected: list[str]) -> None:
    assert argv(**spec) == expected


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"method": "eagle", "draft_model": "/e.gguf", "num_speculative_tokens": 3},
            "speculative.method 'eagle'",
        ),
        (
            {
                "method": "eagle3",
                "draft_model": "/e.gguf",
                "num_speculative_tokens": 3,
                "eagle_topk": 4,
            },
            "speculative.eagle_topk",
        ),
        (
            {"method": "mtp", "num_speculative_tokens": 3, "num_draft_tokens": 8},
            "speculative.num_draft_tokens",
        ),
        (
            {
                "method": "ngram",
                "num_speculative_tokens": 3,
                "prompt_lookup_min": 1,
                "prompt_lookup_max": 4,
            },
            "speculative.prompt_lookup_min",
        ),
    ],
)
def test_what_llama_server_lacks_is_refused_naming_the_field(spec: dict, field: str) -> None:
    with pytest.raises(UserFacingError, match=field):
        argv(**spec)


LLAMA_METRICS = """\
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 30
# TYPE llamacpp:spec_decode_num_accepted_tokens_total counter
llamacpp:spec_decode_num_accepted_tokens_total 12
# TYPE llamacpp:spec_decode_num_drafts_total counter
llamacpp:spec_decode_num_drafts_total 10
# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 7
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 4
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 1
"""


def test_llama_servers_speculative_counters_are_read_as_vllms_are() -> None:
    """The names of llama-server's /metrics (tools/server/server-task.cpp), as a scrape
    reads them: the totals vLLM's counters give."""
    from inferx_core.telemetry.speculative import spec_decode_values
    from inferx_llamacpp import hooks

    names = hooks.inferx_engine_metrics(server=ServerConfig(engine="llamacpp", model="/m.gguf"))
    values = spec_decode_values(LLAMA_METRICS, names)
    assert values["engine.spec_decode_drafts_total"] == 10
    assert values["engine.spec_decode_draft_tokens_total"] == 30
    assert values["engine.spec_decode_accepted_tokens_total"] == 12
    # its per-position counter disagreed with its totals over a real window: not read
    assert not any("accepted_pos" in key for key in values)
