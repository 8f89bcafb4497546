"""Config files that must not stall or crash the loader: one error naming the file, exit 2.

Not UTF-8, nested thousands deep, aliases that expand without bound (a small
file that grew to gigabytes), integers of thousands of digits, strings and
ids too long, duplicate keys. The alias case runs in a child process under a
memory limit, so the code before the fix fails it instead of taking the machine.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.config.parsing import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_VALUES,
    ParseError,
    loads_json,
    loads_yaml,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
GOOD = "engine: vllm\nmodel: org/model\n"


def refused(path: Path, content: str | bytes, capsys: pytest.CaptureFixture[str]) -> str:
    """``inferx validate`` of ``content`` exits 2 naming the file, no traceback; the error."""
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and f"inferx: error: invalid config {path}" in err
    return err


def _laughs(levels: int = 9, width: int = 9) -> str:
    """The billion laughs: each level is ``width`` aliases of the one before."""
    lines = ["engine: vllm", "model: org/model", "extra_argv: &a0 [lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_a_file_that_is_not_utf8_names_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(tmp_path / "c.yaml", b"engine: vllm\nmodel: caf\xe9-7b\n", capsys)
    assert "line 2: not UTF-8 text (byte 0xe9" in err and "save the file as UTF-8" in err


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", GOOD + "engine_args: {a: " + "[" * 5000 + "]" * 5000 + "}\n"),
        ("block.yaml", GOOD + "".join(" " * i + f"k{i}:\n" for i in range(1000))),
        ("deep.json", '{"engine": "vllm", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("under-the-stack.json", '{"engine": "vllm", "x": ' + "[" * 500 + "]" * 500 + "}"),
    ],
)
def test_nesting_thousands_deep_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    err = refused(tmp_path / name, text, capsys)
    assert "nested more than" in err or "maximum nesting depth" in err


def test_aliases_that_expand_without_bound_are_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(_laughs())  # 9**9 values from 400 bytes

    def limit_memory() -> None:
        gib = 1 << 30
        resource.setrlimit(resource.RLIMIT_AS, (2 * gib, 2 * gib))

    done = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=600,  # a safety net only: the fix answers at once, the bug runs out of memory
        preexec_fn=limit_memory,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"invalid config {path}" in done.stderr and "aliases" in done.stderr


def test_an_alias_of_itself_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(tmp_path / "c.yaml", GOOD + "extra_argv: &me [*me]\n", capsys)
    assert "line 3: alias *me refers to itself" in err


@pytest.mark.parametrize("digits", [100, 5000])
def test_integers_of_many_digits_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], digits: int
) -> None:
    load = "load:\n  concurrency: [" + "9" * digits + "]\n"
    err = refused(tmp_path / "c.yaml", GOOD + load, capsys)
    assert f"line 4: an integer of {digits} digits (at most {MAX_INT_DIGITS})" in err
    err = refused(
        tmp_path / "c.json", '{"engine": "vllm", "max_model_len": ' + "9" * digits + "}", capsys
    )
    assert "digits" in err


def test_a_long_model_name_is_refused_as_an_id_too_long(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(tmp_path / "c.yaml", f"engine: vllm\nmodel: org/{'m' * 50_000}\n", capsys)
    assert "ids name result files" in err and "`name:` or `model:`" in err
    err = refused(tmp_path / "b.yaml", f"base_url: http://127.0.0.1:9\nname: {'n' * 300}\n", capsys)
    assert "ids name result files" in err


def test_a_long_local_path_with_a_short_last_part_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "c.yaml").write_text(f"engine: vllm\nmodel: /{'d' * 3000}/model-8b\n")
    assert main(["validate", str(tmp_path / "c.yaml")]) == 0, capsys.readouterr().err


def test_a_string_over_the_limit_is_refused_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = GOOD + f"engine_args:\n  chat_template: {'x' * 70_000}\n"
    err = refused(tmp_path / "c.yaml", text, capsys)
    assert "line 4: a string of 70000 characters" in err


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(tmp_path / "c.yaml", GOOD + "#" * (2 << 20) + "\n", capsys)
    assert "bytes, over the" in err


DUPLICATES = [
    (
        "c.yaml",
        "engine: vllm\nmodel: a\nmodel: b\n",
        "line 3: duplicate key 'model' (first at line 2",
    ),
    ("q.yaml", "engine: vllm\nmodel: a\n'model': b\n", "line 3: duplicate key 'model'"),
    ("n.yaml", GOOD + "load:\n  concurrency: [1]\n  concurrency: [2]\n", "line 5: duplicate key"),
    ("c.json", '{"engine": "vllm", "model": "a", "model": "b"}', "duplicate key 'model'"),
]


@pytest.mark.parametrize(("name", "text", "where"), DUPLICATES)
def test_duplicate_keys_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, where: str
) -> None:
    assert where in refused(tmp_path / name, text, capsys)


def test_merge_keys_may_still_be_overridden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "defaults: &d {engine: vllm, model: a}\n"
    parsed, _ = loads_yaml(text + "run:\n  <<: *d\n  model: b\n")
    assert parsed["run"] == {"engine": "vllm", "model": "b"}


def test_plan_output_is_not_run_through_the_repr_highlighter(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rich's highlighter is quadratic in a long word; the plan shows data, not reprs."""
    import rich.highlighter

    from inferx_core.cli.plan_view import render_plan

    def refuse(*_: Any) -> None:
        raise AssertionError("the plan went through the repr highlighter")

    monkeypatch.setattr(rich.highlighter.ReprHighlighter, "highlight", refuse)
    spec = {"argv": ["vllm", "serve", "/" + "p" * 5000], "env": {}, "unset_env": [],
            "gpu_ids": [0], "warnings": ["w" * 5000]}  # fmt: skip
    item = {"server": "s", "engine": "vllm", "plugin": "p", "spec": spec, "port_note": None,
            "port": 1, "fixes_applied": [], "points": ["a" * 200]}  # fmt: skip
    item["launcher"] = {"launcher": "process", "argv": spec["argv"]}  # what describe() gives
    render_plan([item])
    assert "p" * 100 in capsys.readouterr().out


# -- the parser itself: agrees with the standard ones where they are safe ----------------
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@FAST
@given(value=json_values)
def test_valid_documents_read_as_the_standard_parsers_read_them(value: Any) -> None:
    assert loads_json(json.dumps(value)) == value
    assert loads_yaml(yaml.safe_dump(value))[0] == yaml.safe_load(yaml.safe_dump(value))


@FAST
@given(value=json_values, bad=st.sampled_from([math.nan, math.inf, -math.inf]), data=st.data())
def test_a_non_finite_number_anywhere_is_refused(
    value: Any, bad: float, data: st.DataObject
) -> None:
    path = data.draw(st.lists(st.sampled_from(["list", "dict"]), max_size=5))
    doc: Any = bad
    for kind in path:
        doc = [value, doc] if kind == "list" else {"k": value, "x": doc}
    with pytest.raises(ParseError):
        loads_json(json.dumps(doc))
    with pytest.raises(ParseError, match="infinity"):
        loads_json(json.dumps(doc).replace("Infinity", "1e999").replace("NaN", "-1e999"))


@FAST
@given(depth=st.integers(MAX_DEPTH + 1, 3 * MAX_DEPTH), kind=st.sampled_from(["[", "{"]))
def test_any_depth_over_the_limit_is_refused_and_under_it_read(depth: int, kind: str) -> None:
    def nested(n: int) -> str:
        return "[" * n + "]" * n if kind == "[" else '{"a": ' * n + "1" + "}" * n

    with pytest.raises(ParseError, match="nested more than"):
        loads_json(nested(depth))
    with pytest.raises(ParseError, match="nested more than"):
        loads_yaml(nested(depth))
    assert loads_json(nested(MAX_DEPTH - 1)) == loads_yaml(nested(MAX_DEPTH - 1))[0]


@FAST
@given(levels=st.integers(2, 12), width=st.integers(2, 12))
def test_aliases_are_counted_as_the_values_they_stand_for(levels: int, width: int) -> None:
    expanded = 4  # the first list and its 3 items; each level: a list of `width` of those
    for _ in range(levels):
        expanded = 1 + width * expanded
    text = _laughs(levels, width)
    if expanded > 2 * MAX_VALUES:
        with pytest.raises(ParseError, match="aliases"):
            loads_yaml(text)
    elif expanded < MAX_VALUES // 2:
        assert len(loads_yaml(text)[0][f"x{levels}"]) == width


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"accelerators": [], "x": "caf\xe9"}', "not UTF-8 text"),
        (b'{"accelerators": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested more than"),
        (b'{"accelerators": [{"memory_gb": NaN}]}', "NaN is not a number"),
    ],
)
def test_a_platform_file_is_read_as_strictly_as_a_config(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    from inferx_core.errors import UserFacingError
    from inferx_core.sdk.platform import load_platform

    path = tmp_path / "platform.json"
    path.write_bytes(content)
    with pytest.raises(UserFacingError, match=reason) as caught:
        load_platform(path)
    assert str(caught.value).startswith(f"invalid platform file {path}")


def _long_string_bomb(chars: int = 60_000, width: int = 10, levels: int = 3) -> str:
    """A few KB of YAML: one long string, then lists of `width` aliases of the level below;
    a few thousand values in all, width**levels * chars characters of text."""
    lines = [f"s0: &s0 {'x' * chars}"]
    for level in range(1, levels + 1):
        lines.append(f"s{level}: &s{level} [{', '.join([f'*s{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_of_long_strings_is_refused_by_its_size_not_let_through(
    tmp_path: Path,
) -> None:
    """Few values (1,111), 60 MB of text: the limit counts characters too, so ``validate
    --json`` answers with one short error instead of writing the expansion out."""
    path = tmp_path / "long-laughs.yaml"
    path.write_text(_long_string_bomb())
    with pytest.raises(ParseError, match="characters of text once aliases are expanded"):
        loads_yaml(path.read_text())
    done = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "validate", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert len(done.stdout) + len(done.stderr) < 10_000
    assert "aliases" in done.stdout + done.stderr


def test_text_under_the_expanded_limit_still_reads() -> None:
    data, _ = loads_yaml(_long_string_bomb(chars=1_000, width=4, levels=2))
    assert len(data["s2"]) == 4 and data["s2"][0][0] == "x" * 1_000
