"""llama-server's own word on an argv: its ``--help`` lists every flag it takes.

llama-server has no parse-only mode, and starting it to see whether it refuses a
flag would load the model; its ``--help`` lists every flag (the leading,
dash-started segments of each line) and marks the deprecated ones. ``make test``
and ``inferx plan --check-args`` both read it from the binary the launch runs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from inferx_core import ArgvVerdict, LaunchSpec, NoParserHere, ParserAnswer, argv_verdict

FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)")


def help_flags(binary: str | Path) -> tuple[set[str], set[str]]:
    """(every flag ``--help`` lists, the flags on lines that say deprecated)."""
    text = subprocess.run(
        [str(binary), "--help"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    known: set[str] = set()
    deprecated: set[str] = set()
    for line in text.splitlines():
        # "-np,   --parallel N      number of ...": the flag column is the leading
        # segments (split at runs of spaces) that start with a dash
        names = []
        for segment in re.split(r"\s{2,}", line.strip()):
            if not segment.startswith("-"):
                break
            names.append(segment)
        flags = set(FLAG.findall(" ".join(names)))
        known |= flags
        if "deprecated" in line.lower():
            deprecated |= flags
    return known, deprecated


def given_flags(argv: Sequence[str]) -> set[str]:
    """The flags of an argv (a negative number is a value, not a flag)."""
    return {a.split("=", 1)[0] for a in argv[1:] if a.startswith("-") and not a[1:].isdigit()}


def problem(argv: Sequence[str], known: set[str], deprecated: set[str]) -> str | None:
    """Why llama-server would not take ``argv`` as it is, or None."""
    unknown = sorted(given_flags(argv) - known)
    if unknown:
        return f"llama-server --help lists no {', '.join(unknown)}"
    old = sorted(given_flags(argv) & deprecated)
    return f"llama-server calls {', '.join(old)} deprecated" if old else None


def version(binary: str | Path) -> str | None:
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    lines = (done.stdout + done.stderr).strip().splitlines()
    found = [line for line in lines if line.startswith("version")]
    return found[0].removeprefix("version:").strip() if found else None


def _locate(argv: Sequence[str]) -> str:
    binary = shutil.which(argv[0])
    if binary is None:
        raise NoParserHere(
            f"{argv[0]} is not here: build it (`make llama-server`) to check its flags"
        )
    return binary


def check_launch(spec: LaunchSpec) -> ArgvVerdict:
    """llama-server's verdict on a launch, from the binary the launch would run."""

    def ask(binary: str) -> ParserAnswer:
        known, deprecated = help_flags(binary)
        found = problem(spec.argv, known, deprecated)
        return ParserAnswer(found, version(binary), f"{binary} --help")

    hint = "run `inferx plan --check-args` where llama-server runs"
    return argv_verdict(spec, "llamacpp", locate=_locate, ask=ask, install_hint=hint)
