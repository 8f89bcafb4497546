"""Strict, bounded parsing of the JSON and YAML that InferX reads from files.

A config or a result file is data from outside. A small file must not grow to
gigabytes (YAML aliases), recurse until the stack gives out (nesting), spend
minutes on one number (thousands of digits) or carry NaN into statistics.
Every limit here is far above what a real file needs; a file over one raises
:class:`ParseError`, whose message says what and where. The config loader and
every result reader parse through this module, so no reader is left out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser):  # type: ignore[no-redef]  # the pure-Python one
        def __init__(self, text: str) -> None:
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)


__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_CHARS",
    "MAX_INT_DIGITS",
    "MAX_STRING_CHARS",
    "MAX_VALUES",
    "ParseError",
    "StrictLoader",
    "check_values",
    "decode_utf8",
    "loads_data_json",
    "loads_json",
    "loads_yaml",
    "read_bounded",
]

#: Nesting of mappings and lists; real configs and results stay under 12.
MAX_DEPTH = 64
#: Values in one document, YAML aliases expanded (a billion-laughs file has 10**9);
#: a sidecar row of a 128k-token reply has 128k chunk times.
MAX_VALUES = 500_000
#: Digits of an integer; 2**128 has 39. Python refuses over 4300 with a traceback.
MAX_INT_DIGITS = 40
#: Characters of one string: room for an inline chat template, not for a stray blob.
MAX_STRING_CHARS = 65_536
#: Characters of scalars in one YAML document, aliases expanded: 16 times the largest config
#: file (1 MiB). Counting values alone let 400 aliases of a 64k-character string through, and
#: ``validate --json`` wrote hundreds of MB.
MAX_EXPANDED_CHARS = 16 << 20


class ParseError(ValueError):
    """Text that is not valid, or over a limit; ``str()`` is the reason, ``line`` when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        self.reason = reason
        self.line = line
        super().__init__(f"line {line}: {reason}" if line else reason)


def read_bounded(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of ``path``; a file over ``max_bytes`` is refused before it is read."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ParseError(
            f"{size} bytes, over the {max_bytes} a {what} can be; is it the right file?"
        )
    return decode_utf8(path.read_bytes())


def decode_utf8(raw: bytes) -> str:
    """``raw`` as text (a leading BOM is dropped); otherwise where the first bad byte is."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ParseError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8",
            line,
        ) from None


def _refuse_constant(name: str) -> Any:
    raise ParseError(f"{name} is not a number JSON allows; write null for a missing value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ParseError(f"duplicate key {key!r}; keep one")
        out[key] = value
    return out


class _JsonHooks(TypedDict, total=False):
    """The ``json.loads`` keywords these readers set (typed, for ``**hooks``)."""

    parse_constant: Callable[[str], Any]
    object_pairs_hook: Callable[[list[tuple[Any, Any]]], Any]


def loads_json(text: str, *, finite: bool = True, unique_keys: bool = False) -> Any:
    """``json.loads`` with the limits above (:func:`check_values`); ``finite``: NaN,
    Infinity and numbers that overflow to it (``1e999``) are refused.

    Raises :class:`ParseError` for invalid JSON too (its ``line`` set).
    """
    hooks: _JsonHooks = {}
    if finite:
        hooks["parse_constant"] = _refuse_constant
    if unique_keys:
        hooks["object_pairs_hook"] = _unique_keys
    data = _decode_json(
        text,
        hooks,
        too_deep=f"nested more than {MAX_DEPTH} levels deep",
        too_many_digits=f"an integer of thousands of digits (at most {MAX_INT_DIGITS})",
    )
    check_values(data, finite=finite)
    return data


def loads_data_json(text: str) -> Any:
    """A data file's JSON (a dataset or trace line, a JSON dataset): :func:`loads_json`'s
    refusals of NaN/Infinity, deep nesting and huge integers, without the config-sized
    value limits (a prompt string may be long; its reader bounds the bytes).

    Raises :class:`ParseError` for invalid JSON too (its ``line`` set).
    """
    hooks: _JsonHooks = {"parse_constant": _refuse_constant}
    return _decode_json(
        text,
        hooks,
        too_deep="nested too deep (thousands of levels)",
        too_many_digits="an integer of thousands of digits",
    )


def _decode_json(text: str, hooks: _JsonHooks, *, too_deep: str, too_many_digits: str) -> Any:
    """``json.loads`` with each way it fails as a :class:`ParseError`; the reasons for
    Python's own depth and digit limits come from the caller, whose limits differ."""
    try:
        return json.loads(text, **hooks)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise ParseError(too_deep) from None
    except ValueError as exc:  # Python's own limit on the digits of an integer
        if "digits" not in str(exc):
            raise
        raise ParseError(too_many_digits) from None


_NUMBERS = frozenset({int, float, bool, type(None)})
#: No count, size or time InferX reads comes near this; 2**128 is 3.4e38.
_MAX_MAGNITUDE = 10**MAX_INT_DIGITS


def check_values(data: Any, *, finite: bool = True) -> None:
    """Refuse nesting over :data:`MAX_DEPTH`, more than :data:`MAX_VALUES` values, strings
    over :data:`MAX_STRING_CHARS`, integers over :data:`MAX_INT_DIGITS` digits and, when
    ``finite``, infinite numbers (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    count = 1
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            _check_scalar_value(value, finite)
            continue
        if depth >= MAX_DEPTH:
            raise ParseError(f"nested more than {MAX_DEPTH} levels deep")
        items = list(value.values()) if isinstance(value, dict) else value
        count += len(items)
        if count > MAX_VALUES:
            raise ParseError(f"more than {MAX_VALUES} values")
        kinds = set(map(type, items))
        if kinds <= _NUMBERS:  # a list of numbers (a sidecar's chunk times): no loop
            _check_numbers(items, kinds, finite)
            continue
        for item in items:
            if isinstance(item, dict | list):
                stack.append((item, depth + 1))
            else:
                _check_scalar_value(item, finite)


def _check_scalar_value(value: Any, finite: bool) -> None:
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ParseError(
                f"a string of {len(value)} characters (at most {MAX_STRING_CHARS}): "
                f"{value[:40]!r}..."
            )
    elif value is not None:
        _check_numbers([value], {type(value)}, finite)


def _check_numbers(values: list[Any], kinds: set[type], finite: bool) -> None:
    """Integers within :data:`MAX_INT_DIGITS` digits; floats finite when ``finite``.
    Builtins over the whole list where it holds one kind: sidecars hold millions."""
    if int in kinds:
        ints = values if kinds <= {int, bool} else [v for v in values if type(v) is int]
        low, high = min(ints), max(ints)
        if low <= -_MAX_MAGNITUDE or high >= _MAX_MAGNITUDE:
            big = str(high if high >= -low else low)
            raise ParseError(
                f"an integer of {len(big.lstrip('-'))} digits (at most {MAX_INT_DIGITS})"
            )
    if finite and float in kinds:
        floats = values if kinds == {float} else [v for v in values if type(v) is float]
        if math.isinf(min(floats)) or math.isinf(max(floats)):  # NaN's literal is refused
            raise ParseError("a number that overflows to infinity; write null for a missing value")


def loads_yaml(text: str) -> tuple[Any, Any]:
    """(data, root node) of one YAML document, with the limits above and unique keys.

    The root node (None for an empty document) carries each value's line.
    """
    loader = StrictLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(str(p).replace("\n", " ") for p in (exc.context, exc.problem) if p)
        raise ParseError(f"invalid YAML: {what}", mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ParseError(f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()


class _StrictComposer(Composer):
    """Counts every value, and every scalar's characters, an alias stands for; bounds
    nesting and scalars (with lines)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: list[int] = []  # values so far in each open node, innermost last
        self.chars: list[int] = []  # scalar characters so far in each open node
        self.sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (values, chars), once closed

    if TYPE_CHECKING:  # the parser StrictLoader mixes in gives it (Composer expects one)

        def peek_event(self) -> yaml.Event: ...

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark else None  # libyaml marks every one
        if isinstance(event, yaml.AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self.sizes:
                raise ParseError(f"alias *{event.anchor} refers to itself", line)
            node = super().compose_node(parent, index)
            self._add(*self.sizes[id(node)], line)
            return node
        if len(self.counts) >= MAX_DEPTH:
            raise ParseError(f"nested more than {MAX_DEPTH} levels deep", line)
        self.counts.append(1)
        self.chars.append(0)
        node = super().compose_node(parent, index)
        size = (self.counts.pop(), self.chars.pop())
        self.sizes[id(node)] = size
        if self.counts:
            self._add(*size, line)
        return node

    def _add(self, size: int, chars: int, line: int | None) -> None:
        self.counts[-1] += size
        self.chars[-1] += chars
        if self.counts[-1] > MAX_VALUES:
            raise ParseError(
                f"more than {MAX_VALUES} values once aliases are expanded; "
                "write the values out, or use fewer aliases",
                line,
            )
        if self.chars[-1] > MAX_EXPANDED_CHARS:
            raise ParseError(
                f"more than {MAX_EXPANDED_CHARS} characters of text once aliases are "
                "expanded; write the values out, or use fewer aliases",
                line,
            )

    def compose_scalar_node(self, anchor: Any) -> Any:
        node = super().compose_scalar_node(anchor)
        _check_scalar(node.tag, node.value, node.start_mark.line + 1)
        self.chars[-1] += len(node.value)  # this scalar's own frame, opened by compose_node
        return node


class _StrictConstructor(SafeConstructor):
    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep=deep)


class StrictLoader(_StrictComposer, _Parser, _StrictConstructor, Resolver):
    """libyaml (when built) scans and parses; composing stays in Python, where the limits are."""

    def __init__(self, text: str) -> None:
        _Parser.__init__(self, text)
        _StrictConstructor.__init__(self)
        Resolver.__init__(self)
        _StrictComposer.__init__(self)

    def dispose(self) -> None:
        if hasattr(_Parser, "dispose"):
            _Parser.dispose(self)


_INT_TAG = "tag:yaml.org,2002:int"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_scalar(tag: str, value: str, line: int) -> None:
    if len(value) > MAX_STRING_CHARS:
        raise ParseError(
            f"a string of {len(value)} characters (at most {MAX_STRING_CHARS}): {value[:40]!r}...",
            line,
        )
    if tag == _INT_TAG and sum(c.isdigit() for c in value) > MAX_INT_DIGITS:
        raise ParseError(f"an integer of {len(value)} digits (at most {MAX_INT_DIGITS})", line)


def _refuse_duplicate_keys(node: Any) -> None:
    first: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node.value, str):
            continue  # merged keys (<<) may be overridden: that is what merging means
        key = (key_node.tag, key_node.value)
        line = key_node.start_mark.line + 1
        if key in first:
            raise ParseError(
                f"duplicate key {key_node.value!r} (first at line {first[key]}); keep one", line
            )
        first[key] = line
