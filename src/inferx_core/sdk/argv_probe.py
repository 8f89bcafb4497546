"""The skeleton of an engine plugin's argv check (hook ``inferx_engine_argv_verdict``).

Every engine plugin answers the same way: an engine that runs in an image is
checked where that image runs; without its interpreter or binary here the
check cannot run (and says why); else the engine's own parser is asked, in a
subprocess that never imports the engine into InferX, and its verdict
becomes an :class:`~inferx_core.sdk.argv_check.ArgvVerdict`. What differs per
engine (where its parser is, the probe script, how its answer reads) stays
in the plugin: it passes ``locate`` and ``ask``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferx_core.sdk.argv_check import ArgvVerdict
from inferx_core.sdk.launch_spec import LaunchSpec

__all__ = ["NoParserHere", "ParserAnswer", "ProbeFailed", "argv_verdict", "run_probe"]


class ProbeFailed(RuntimeError):
    """The interpreter could not run the probe (no engine there, a crash): its output's tail."""


class NoParserHere(Exception):
    """The engine's parser is not on this machine; the message says why and how to check."""


@dataclass(frozen=True)
class ParserAnswer:
    """What the engine's parser said of the launch's argv."""

    problem: str | None  # why the engine does not take it as it is; None: accepted
    engine_version: str | None
    checked_with: str  # what parsed it (interpreter and function, binary and flag)


def run_probe(
    python: str | Path,
    script: str,
    argvs: Mapping[str, Sequence[str]],
    *,
    what: str,
    timeout_s: float = 600,
) -> dict[str, Any]:
    """``python -c script ARGVS_JSON ANSWER_PATH``: the script's JSON answer, read from a file
    (engines log to stdout while importing). ``what`` names the parser in the error."""
    with tempfile.TemporaryDirectory(prefix="inferx-argv-probe-") as tmp:
        out = Path(tmp) / "answer.json"
        args = json.dumps({name: list(argv) for name, argv in argvs.items()})
        proc = subprocess.run(
            [str(python), "-c", script, args, str(out)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=tmp,
        )
        if proc.returncode != 0 or not out.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
            raise ProbeFailed(f"{python} could not run {what} (exit {proc.returncode}):\n{tail}")
        answer: dict[str, Any] = json.loads(out.read_text())
        return answer


def argv_verdict(
    spec: LaunchSpec,
    engine: str,
    *,
    locate: Callable[[Sequence[str]], str],
    ask: Callable[[str], ParserAnswer],
    install_hint: str,
) -> ArgvVerdict:
    """The engine's verdict on ``spec.argv`` from the parser the launch would run.

    ``locate(argv)`` names that parser's interpreter or binary, or raises
    :class:`NoParserHere`; ``ask(where)`` runs it. A probe that fails to run
    (:class:`ProbeFailed`, a timeout, an OS error) is "not checked", with
    ``install_hint`` after the reason.
    """
    if spec.image:
        why = f"the engine runs in image {spec.image}: check its argv where that image runs"
        return ArgvVerdict(engine=engine, accepted=None, message=why)
    try:
        where = locate(spec.argv)
    except NoParserHere as exc:
        return ArgvVerdict(engine=engine, accepted=None, message=str(exc))
    try:
        answer = ask(where)
    except (ProbeFailed, subprocess.TimeoutExpired, OSError) as exc:
        why = f"{exc}\n{install_hint}"
        return ArgvVerdict(engine=engine, accepted=None, message=why, checked_with=where)
    return ArgvVerdict(
        engine=engine,
        accepted=answer.problem is None,
        message=answer.problem or "accepted",
        engine_version=answer.engine_version,
        checked_with=answer.checked_with,
    )
