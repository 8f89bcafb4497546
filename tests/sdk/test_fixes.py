"""Fix pipeline: ordering, recording, disabling, composition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferx_core.config.models import ServerConfig
from inferx_core.sdk.fixes import (
    DuplicateFixError,
    Fix,
    FixContext,
    FixVerdict,
    apply_fixes,
    spec_changes,
)
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.platform import Platform

CTX = FixContext(server=ServerConfig(engine="vllm", model="m", port=8000), platform=Platform())
BASE = LaunchSpec(engine="vllm", argv=("vllm", "serve", "m"), port=8000)


def env_fix(fix_id: str, key: str, value: str, *, order: int = 100, when: bool = True) -> Fix:
    return Fix(
        id=fix_id,
        title=fix_id,
        symptom="s",
        condition_text="c",
        change_text=f"{key}={value}",
        reference="r",
        condition=lambda ctx, spec: FixVerdict(when, "because" if when else "not here"),
        change=lambda spec, ctx: spec.with_env(**{key: value}),
        order=order,
    )


def test_applied_fixes_are_recorded_with_changes_and_reason() -> None:
    spec, applied, decisions = apply_fixes(
        BASE, [env_fix("a", "A", "1"), env_fix("b", "B", "2", when=False)], CTX
    )
    assert spec.env == {"A": "1"}
    assert [a.id for a in applied] == ["a"]
    assert applied[0].changes == {"env": {"set": {"A": "1"}}}
    assert applied[0].why == "because"
    assert [(d.id, d.applied, d.reason) for d in decisions] == [
        ("a", True, "because"),
        ("b", False, "not here"),
    ]


def test_disabled_by_id() -> None:
    spec, applied, decisions = apply_fixes(BASE, [env_fix("a", "A", "1")], CTX, disabled=["a"])
    assert spec == BASE and applied == []
    assert decisions[0].reason == "disabled in config"


def test_duplicate_ids_rejected() -> None:
    with pytest.raises(DuplicateFixError, match="'a'"):
        apply_fixes(BASE, [env_fix("a", "A", "1"), env_fix("a", "A", "2")], CTX)


def test_condition_sees_earlier_fixes() -> None:
    first = env_fix("first", "X", "1", order=1)
    second = Fix(
        id="second",
        title="t",
        symptom="s",
        condition_text="c",
        change_text="c",
        reference="r",
        condition=lambda ctx, spec: FixVerdict("X" in spec.env, "X set"),
        change=lambda spec, ctx: spec.with_args("--x"),
        order=2,
    )
    spec, applied, _ = apply_fixes(BASE, [second, first], CTX)
    assert [a.id for a in applied] == ["first", "second"] and spec.argv[-1] == "--x"


keys = st.sampled_from(["A", "B", "C", "D"])
fix_lists = st.lists(
    st.tuples(keys, st.text(min_size=1, max_size=3), st.integers(0, 5), st.booleans()),
    max_size=6,
).map(
    lambda items: [
        env_fix(f"f{i}", key, value, order=order, when=when)
        for i, (key, value, order, when) in enumerate(items)
    ]
)


@given(fix_lists, st.randoms())
def test_result_is_independent_of_offer_order(fixes: list[Fix], rnd) -> None:
    shuffled = list(fixes)
    rnd.shuffle(shuffled)
    assert apply_fixes(BASE, fixes, CTX)[0] == apply_fixes(BASE, shuffled, CTX)[0]


@given(fix_lists)
def test_env_fixes_are_idempotent(fixes: list[Fix]) -> None:
    once = apply_fixes(BASE, fixes, CTX)[0]
    twice = apply_fixes(once, fixes, CTX)[0]
    assert once == twice


@given(fix_lists, st.data())
def test_disabling_a_fix_removes_only_its_record(fixes: list[Fix], data) -> None:
    if not fixes:
        return
    victim = data.draw(st.sampled_from(fixes)).id
    _, applied_all, _ = apply_fixes(BASE, fixes, CTX)
    _, applied_some, decisions = apply_fixes(BASE, fixes, CTX, disabled=[victim])
    assert victim not in {a.id for a in applied_some}
    assert [a.id for a in applied_some] == [a.id for a in applied_all if a.id != victim]
    assert any(d.id == victim and d.reason == "disabled in config" for d in decisions)


def test_spec_changes_shows_argv_and_removed_env() -> None:
    after = BASE.model_copy(update={"argv": (*BASE.argv, "--x"), "ulimits": {"core": 0}})
    changes = spec_changes(BASE.with_env(GONE="1"), after)
    assert changes["argv"]["to"][-1] == "--x"
    assert changes["env"] == {"removed": ["GONE"]}
    assert changes["ulimits"] == {"set": {"core": 0}}


def test_launch_spec_rejects_shell_strings() -> None:
    with pytest.raises(ValueError, match="not a shell string"):
        LaunchSpec(engine="x", argv=("vllm serve m --port 1",), port=1)
