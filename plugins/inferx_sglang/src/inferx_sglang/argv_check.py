"""SGLang's own parser on InferX's argv: what ``make test`` and ``inferx plan --check-args`` ask.

An argv is right only when SGLang accepts it. :data:`PROBE` runs in an
interpreter that has SGLang (never InferX's: SGLang pins its own torch), builds
``sglang.launch_server``'s parser exactly as the launch does
(``prepare_server_args``, which parses and builds the raw ``ServerArgs`` without
resolving them against a model or GPU), and answers per argv:

- ``error``: SGLang's own message when it refuses the argv (argparse's last
  line, or the exception), else ``None``;
- ``deprecated``: every deprecation warning SGLang printed for it, and every
  flag given whose help calls it deprecated (some deprecated flags do not warn);
- ``abbreviated``: flags that are not SGLang's own spelling but that argparse
  took as the prefix of one (``--enable-metric``): right today by accident;
- ``namespace``: the parsed values, to check they are what the config asked for.

The answer is JSON written to a file (SGLang prints to stdout while importing).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from inferx_core import (
    ArgvVerdict,
    LaunchSpec,
    NoParserHere,
    ParserAnswer,
    argv_verdict,
    run_probe,
)

LAUNCH_MODULE = "sglang.launch_server"

PROBE = r"""
import argparse, contextlib, io, json, logging, sys
from importlib.metadata import version

warned = []


class Catch(logging.Handler):
    def emit(self, record):
        text = record.getMessage()
        if "deprecat" in text.lower():
            warned.append(text.replace("\x1b[1;33m", "").replace("\x1b[0m", ""))


# prepare_server_args resets the root logger's handlers (basicConfig force=True):
# catch on SGLang's own logger, which the deprecation warnings go through.
logging.getLogger("sglang").addHandler(Catch(logging.WARNING))
from sglang.srt.server_args import ServerArgs, prepare_server_args

reference = argparse.ArgumentParser()
ServerArgs.add_cli_args(reference)
flags, deprecated_help = set(), {}
dests = sorted({a.dest for a in reference._actions if a.dest != "help"})
for action in reference._actions:
    flags.update(action.option_strings)
    if "deprecat" in (action.help or "").lower():
        for flag in action.option_strings:
            deprecated_help[flag] = action.help


def given_flags(argv):
    return [a.split("=", 1)[0] for a in argv if a.startswith("--")]


answer = {"version": version("sglang"), "flags": sorted(flags), "results": {}}
for name, argv in json.loads(sys.argv[1]).items():
    warned.clear()
    result = {"error": None, "deprecated": [], "namespace": None}
    # argparse takes an unambiguous prefix of a flag: InferX must spell flags whole.
    result["abbreviated"] = [f for f in given_flags(argv) if f not in flags]
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = prepare_server_args(argv)
        values = {dest: getattr(args, dest, None) for dest in dests}
        result["namespace"] = json.loads(json.dumps(values, default=str))
    except SystemExit as exc:  # argparse's error(): its message is on stderr
        lines = stderr.getvalue().strip().splitlines()
        result["error"] = lines[-1] if lines else f"exit {exc.code}"
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    notes = list(warned)
    notes += [f"{f}: {deprecated_help[f]}" for f in given_flags(argv) if f in deprecated_help]
    result["deprecated"] = notes
    answer["results"][name] = result
with open(sys.argv[2], "w") as f:
    json.dump(answer, f)
"""


def engine_args_of(argv: Sequence[str]) -> list[str]:
    """The arguments after ``... -m sglang.launch_server`` (or after a custom executable)."""
    items = list(argv)
    if LAUNCH_MODULE in items:
        return items[items.index(LAUNCH_MODULE) + 1 :]
    return items[1:]


def probe(
    python: str | Path, argvs: Mapping[str, Sequence[str]], *, timeout_s: float = 600
) -> dict[str, Any]:
    """Run :data:`PROBE` with ``python`` on each named argv (engine arguments only)."""
    return run_probe(python, PROBE, argvs, what="SGLang's parser", timeout_s=timeout_s)


def verdict(result: Mapping[str, Any]) -> str | None:
    """Why SGLang does not take this argv as it is, or ``None`` when it does."""
    if result["error"]:
        return f"SGLang refuses it: {result['error']}"
    if result.get("abbreviated"):
        return "not SGLang's spelling (argparse took a prefix): " + ", ".join(result["abbreviated"])
    if result["deprecated"]:
        return "SGLang calls it deprecated: " + "; ".join(result["deprecated"])
    return None


def launch_python(argv: Sequence[str]) -> str | None:
    """The interpreter of ``PYTHON -m sglang.launch_server ...`` (past a fix's wrapper)."""
    items = list(argv)
    if LAUNCH_MODULE not in items:
        return None
    at = items.index(LAUNCH_MODULE)
    return items[at - 2] if at >= 2 and items[at - 1] == "-m" else None


def _locate(argv: Sequence[str]) -> str:
    python = launch_python(argv)
    found = shutil.which(python) if python else None
    if found is None:
        raise NoParserHere(
            f"{python} is not on PATH here"
            if python
            else f"the launch is not PYTHON -m {LAUNCH_MODULE}, so InferX cannot ask its parser"
        )
    return found


def check_launch(spec: LaunchSpec) -> ArgvVerdict:
    """SGLang's verdict on a launch, from the interpreter that launch would run."""

    def ask(python: str) -> ParserAnswer:
        answer = probe(python, {"launch": engine_args_of(spec.argv)})
        problem = verdict(answer["results"]["launch"])
        where = f"{python}: sglang.srt.server_args.prepare_server_args"
        return ParserAnswer(problem, answer["version"], where)

    hint = "install sglang there, or run `inferx plan --check-args` where it is"
    return argv_verdict(spec, "sglang", locate=_locate, ask=ask, install_hint=hint)
