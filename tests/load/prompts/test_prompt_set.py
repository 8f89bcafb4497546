"""Workload building: exact prompt lengths, reproducibility, datasets."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizer_fixtures import FakeTokenizeServer

import inferx_core.load.tokens.tokenizer as tokmod
from inferx_core.load.prompts.dataset import DatasetError, load_jsonl_dataset
from inferx_core.load.prompts.lengths import LengthSpec
from inferx_core.load.prompts.prompt_set import PromptSpec, WorkloadSpec, build_prompt_set
from inferx_core.load.tokens.counter import EstimateCounter
from inferx_core.load.tokens.server_tokenizer import ServerTokenizer
from inferx_core.load.tokens.tokenizer import LocalTokenizer

# --------------------------------------------------------------------------
# fixtures (hf_tok: tests/load/conftest.py)


@pytest.fixture(scope="session")
def local(hf_tok: Any) -> LocalTokenizer:
    return LocalTokenizer(hf_tok, "test-bpe")


@pytest.fixture()
def vocab_pool_local(hf_tok: Any, monkeypatch: pytest.MonkeyPatch) -> LocalTokenizer:
    """A tokenizer that draws from the whole vocabulary (the drift-heavy path)."""
    monkeypatch.setattr(tokmod, "_STABLE_MIN", 10**9)
    return LocalTokenizer(hf_tok, "test-bpe-all-ids")


def _check_exact(w: Any, hf_tok: Any, chat: bool = False) -> None:
    assert w.missed == 0 and w.max_abs_miss == 0 and not w.estimated
    for p in w.prompts:
        assert p.hit_target and p.prompt_tokens == p.target_prompt_tokens
        text = p.prompt[0]["content"] if chat else p.prompt
        enc = hf_tok.encode(text, add_special_tokens=not chat)
        assert len(enc.ids) == p.target_prompt_tokens  # independent re-count
        body = hf_tok.encode(text, add_special_tokens=False).ids
        assert not ({0, 1, 2} & set(body))  # no special tokens inside the prompt


# --------------------------------------------------------------------------
# random prompts


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(min_value=0, max_value=2**31),
    isl=st.integers(min_value=1, max_value=400),
    semantics=st.sampled_from(["inferencex", "vllm", "sglang", "fixed"]),
    api=st.sampled_from(["completions", "chat"]),
)
def test_random_prompts_hit_exact_length(
    local: LocalTokenizer, hf_tok: Any, seed: int, isl: int, semantics: str, api: str
) -> None:
    spec = WorkloadSpec(isl=isl, osl=64, range_ratio=0.5, semantics=semantics, api=api)  # type: ignore[arg-type]
    w = build_prompt_set(spec, local, 12, seed)
    assert len(w) == 12
    _check_exact(w, hf_tok, chat=api == "chat")
    lo, hi = spec.input_lengths().bounds
    olo, ohi = spec.output_lengths().bounds
    assert all(lo <= p.target_prompt_tokens <= hi and olo <= p.max_tokens <= ohi for p in w)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**31), isl=st.integers(min_value=1, max_value=300))
def test_whole_vocab_pool_still_exact(
    vocab_pool_local: LocalTokenizer, hf_tok: Any, seed: int, isl: int
) -> None:
    """Ids from the whole vocabulary drift on decode/re-encode; the fix loop converges."""
    w = build_prompt_set(WorkloadSpec(isl=isl, semantics="fixed"), vocab_pool_local, 20, seed)
    _check_exact(w, hf_tok)
    assert vocab_pool_local.candidate_pool.startswith("all ")


def test_reproducible_and_distinct(local: LocalTokenizer) -> None:
    spec = WorkloadSpec(isl=128, osl=32)
    a = build_prompt_set(spec, local, 30, 7)
    b = build_prompt_set(spec, LocalTokenizer(local._tok), 30, 7)
    assert a.prompts == b.prompts
    assert build_prompt_set(spec, local, 10, 7).prompts == a.prompts[:10]  # prompt i ignores n
    c = build_prompt_set(spec, local, 30, 8)
    assert [p.prompt for p in a] != [p.prompt for p in c]
    # every prompt starts differently: nothing for a prefix cache to share
    starts = {local.encode(p.prompt)[:4].__repr__() for p in a}  # type: ignore[arg-type]
    assert len(starts) == 30


def test_unique_prefix(local: LocalTokenizer, hf_tok: Any) -> None:
    w = build_prompt_set(WorkloadSpec(isl=64, semantics="fixed", unique_prefix=True), local, 5, 3)
    _check_exact(w, hf_tok)
    assert all(
        isinstance(p.prompt, str) and p.prompt.startswith(f"[3-{i}]") for i, p in enumerate(w)
    )


def test_metadata_records_semantics(local: LocalTokenizer) -> None:
    w = build_prompt_set(WorkloadSpec(isl=1024, osl=1024), local, 4, 0)
    s = w.summary()
    assert s["input_lengths"]["semantics"] == "inferencex" and w.semantics == "inferencex"
    assert (s["input_lengths"]["low"], s["input_lengths"]["high"]) == (819, 1024)
    assert s["output_lengths"]["low"] == 819 and s["token_source"] == "local"
    assert s["seed"] == 0 and s["missed_target"] == 0 and s["num_prompts"] == 4
    json.dumps(s)  # JSON-ready


def test_lognormal_workload(local: LocalTokenizer, hf_tok: Any) -> None:
    spec = WorkloadSpec(
        kind="lognormal",
        input_lognormal=LengthSpec(
            kind="lognormal", length=64, sigma=0.5, min_length=8, max_length=256
        ),
    )
    w = build_prompt_set(spec, local, 40, 1)
    _check_exact(w, hf_tok)
    assert w.input_lengths["semantics"] == "lognormal"
    assert all(8 <= p.target_prompt_tokens <= 256 for p in w)
    assert all(8 <= p.max_tokens <= 1024 for p in w)


def test_targets_below_special_overhead_are_recorded(local: LocalTokenizer) -> None:
    # with BOS, a 1-token completions prompt is the empty string
    w = build_prompt_set(WorkloadSpec(isl=1, semantics="fixed"), local, 3, 0)
    assert all(p.prompt == "" and p.prompt_tokens == 1 for p in w)


def test_build_speed_1000x1024(local: LocalTokenizer) -> None:
    t0 = time.perf_counter()
    w = build_prompt_set(WorkloadSpec(isl=1024, semantics="fixed"), local, 1000, 0)
    elapsed = time.perf_counter() - t0
    assert w.missed == 0
    assert elapsed < 30, f"built 1000 x 1024-token prompts in {elapsed:.1f}s"


# --------------------------------------------------------------------------
# server, count-only and estimate counters


def test_server_counter_is_the_truth(hf_tok: Any) -> None:
    srv = FakeTokenizeServer(hf_tok, max_model_len=2048)
    try:
        with ServerTokenizer.probe(srv.url + "/v1", "m") as tok:
            w = build_prompt_set(WorkloadSpec(isl=96, osl=2000, semantics="fixed"), tok, 25, 5)
            assert w.token_source == "server" and w.missed == 0
            assert tok.count_batch([p.prompt for p in w]) == [96] * 25  # type: ignore[misc]
            assert any("max_model_len=2048" in n for n in w.notes)
            # same seed, same tokenizer (local copy of it): same prompts
            w_local = build_prompt_set(
                WorkloadSpec(isl=96, osl=2000, semantics="fixed"), LocalTokenizer(hf_tok), 25, 5
            )
            assert all(p.hit_target for p in w_local)
    finally:
        srv.close()


def test_count_only_server_cuts_word_text(hf_tok: Any) -> None:
    srv = FakeTokenizeServer(hf_tok, detokenize=False, max_model_len=2048)
    try:
        with ServerTokenizer.probe(srv.url + "/v1", "m") as tok:
            w = build_prompt_set(WorkloadSpec(isl=80, range_ratio=0.5), tok, 20, 2)
            assert w.token_source == "server" and not w.estimated
            assert any("cannot decode" in n for n in w.notes)
            counts = tok.count_batch([p.prompt for p in w])  # type: ignore[misc]
            assert counts == [p.prompt_tokens for p in w]
            assert w.missed <= 2 and w.max_abs_miss <= 1
    finally:
        srv.close()


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_estimate_counter_flags_prompts(api: str) -> None:
    est = EstimateCounter()
    w = build_prompt_set(WorkloadSpec(isl=200, semantics="fixed", api=api), est, 5, 0)  # type: ignore[arg-type]
    assert w.estimated and w.token_source == "estimate"
    assert all(p.estimated for p in w)
    assert any("estimate" in n for n in w.notes)
    for p in w:
        text = p.prompt if isinstance(p.prompt, str) else p.prompt[0]["content"]
        assert est.count(text) == 200 == p.prompt_tokens
    assert w.prompts[0].prompt != w.prompts[1].prompt


# --------------------------------------------------------------------------
# datasets


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "data.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


GOOD = '{"prompt": "hello kalo", "output_len": 5}'


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"text": "x"}', "neither 'prompt' nor 'messages'"),
        ('{"prompt": "x", "messages": []}', "both"),
        ('{"prompt": ""}', "non-empty string"),
        ('{"prompt": 3}', "non-empty string"),
        ('{"prompt": "x", "output_len": 0}', "output_len"),
        ('{"prompt": "x", "output_len": true}', "output_len"),
        ('{"prompt": "x", "output_len": "12"}', "output_len"),
        ('{"messages": []}', "non-empty list"),
        ('{"messages": ["hi"]}', "messages[0] is not an object"),
        ('{"messages": [{"content": "hi"}]}', "'role'"),
        ('{"messages": [{"role": "user", "content": 5}]}', "'content'"),
    ],
)
def test_dataset_errors_name_file_line_and_fix(tmp_path: Path, bad: str, needle: str) -> None:
    path = _write(tmp_path, [GOOD, "", bad, GOOD])  # blank line 2: the bad one is line 3
    with pytest.raises(DatasetError) as info:
        load_jsonl_dataset(path)
    msg = str(info.value)
    assert f"{path}:3:" in msg and needle in msg and "fix:" in msg


def test_dataset_missing_or_empty(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot read"):
        load_jsonl_dataset(tmp_path / "absent.jsonl")
    with pytest.raises(DatasetError, match="no records"):
        load_jsonl_dataset(_write(tmp_path, ["", "  "]))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    good=st.integers(min_value=0, max_value=8),
    blanks=st.lists(st.booleans(), max_size=8),
)
def test_dataset_error_line_number_property(tmp_path: Path, good: int, blanks: list[bool]) -> None:
    lines: list[str] = []
    for i in range(good):
        lines.append(GOOD)
        if i < len(blanks) and blanks[i]:
            lines.append("")
    lines.append('{"oops": 1}')
    path = tmp_path / f"p{good}-{len(blanks)}.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(DatasetError, match=f":{len(lines)}: "):
        load_jsonl_dataset(path)


def test_dataset_workload_completions(tmp_path: Path, local: LocalTokenizer, hf_tok: Any) -> None:
    path = _write(tmp_path, [GOOD, '{"prompt": "mize tovi 中文"}'])
    spec = WorkloadSpec(kind="dataset", dataset_path=str(path), osl=50, semantics="fixed")
    w = build_prompt_set(spec, local, 3, 0)
    assert [p.prompt for p in w] == ["hello kalo", "mize tovi 中文", "hello kalo"]
    assert [p.max_tokens for p in w] == [5, 50, 5]
    assert all(p.prompt_tokens == len(hf_tok.encode(p.prompt).ids) and p.hit_target for p in w)
    assert w.input_lengths["semantics"] == "dataset" and w.input_lengths["records"] == 2
    assert any("repeat" in n for n in w.notes)


def test_dataset_workload_chat(tmp_path: Path, local: LocalTokenizer, hf_tok: Any) -> None:
    msgs = [
        {"role": "system", "content": "kalo"},
        {"role": "user", "content": [{"type": "text", "text": "mize"}]},
    ]
    path = _write(tmp_path, [json.dumps({"messages": msgs, "output_len": 9}), '{"prompt": "tovi"}'])
    w = build_prompt_set(
        WorkloadSpec(kind="dataset", dataset_path=str(path), api="chat"), local, 2, 0
    )
    assert w.prompts[0].prompt == msgs and w.prompts[0].max_tokens == 9
    n = lambda s: len(hf_tok.encode(s, add_special_tokens=False).ids)  # noqa: E731
    assert w.prompts[0].prompt_tokens == n("kalo") + n("mize")
    assert w.prompts[1].prompt == [{"role": "user", "content": "tovi"}]


def test_dataset_messages_need_chat_api(tmp_path: Path, local: LocalTokenizer) -> None:
    path = _write(tmp_path, [GOOD, '{"messages": [{"role": "user", "content": "x"}]}'])
    with pytest.raises(DatasetError, match=r":2: .*api='chat'"):
        build_prompt_set(WorkloadSpec(kind="dataset", dataset_path=str(path)), local, 2, 0)


# --------------------------------------------------------------------------
# spec validation


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "dataset"},
        {"kind": "bogus"},
        {"api": "responses"},
        {"semantics": "lognormal"},
        {"isl": 0},
        {"semantics": "vllm", "range_ratio": 1.0},
        {"max_fix_iterations": 0},
        {"input_lognormal": LengthSpec(kind="fixed")},
    ],
)
def test_invalid_workload_specs(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        WorkloadSpec(**kwargs)


def test_bad_n_and_seed(local: LocalTokenizer) -> None:
    with pytest.raises(ValueError):
        build_prompt_set(WorkloadSpec(), local, -1, 0)
    with pytest.raises(ValueError):
        build_prompt_set(WorkloadSpec(), local, 1, -5)
    assert len(build_prompt_set(WorkloadSpec(), local, 0, 0)) == 0


def test_prompt_spec_miss() -> None:
    p = PromptSpec(prompt="x", prompt_tokens=9, target_prompt_tokens=10, max_tokens=4)
    assert not p.hit_target and p.miss == -1
