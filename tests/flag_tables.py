"""Reference parsers built from flag tables written from an engine's own source.

The engine plugins' flag tests (inferx-sglang, inferx-trtllm) check every argv
InferX emits against such a table where the engine itself is not installable.
A table maps a flag and its aliases to ``(dest, kind)``; kind is "value",
"switch" (store_true / click is_flag) or "list" (nargs="+").
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

FlagTable = dict[tuple[str, ...], tuple[str, str]]


def flags_of(table: FlagTable) -> set[str]:
    """Every spelling in ``table``, aliases included."""
    return {flag for flags in table for flag in flags}


def parser_from_table(
    prog: str, table: FlagTable, positionals: Iterable[str] = ()
) -> argparse.ArgumentParser:
    """An argparse parser that accepts exactly the flags of ``table``, with their arity."""
    parser = argparse.ArgumentParser(prog=prog, exit_on_error=False)
    for name in positionals:
        parser.add_argument(name)
    for flags, (dest, kind) in table.items():
        if kind == "switch":
            parser.add_argument(*flags, dest=dest, action="store_true")
        elif kind == "list":
            parser.add_argument(*flags, dest=dest, nargs="+")
        else:
            parser.add_argument(*flags, dest=dest)
    return parser


def unknown_flags(args: Iterable[str], known: set[str]) -> list[str]:
    """The ``--`` flags in ``args`` that are not in ``known``, sorted."""
    return sorted({token for token in args if token.startswith("--")} - known)
