"""The argv-check skeleton every engine plugin shares (inferx_core.sdk.argv_probe)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from inferx_core import (
    LaunchSpec,
    NoParserHere,
    ParserAnswer,
    ProbeFailed,
    argv_verdict,
    run_probe,
)

SPEC = LaunchSpec(engine="e", argv=("/opt/e/bin/python", "-m", "e.serve", "--x"), port=8000)
# argv[1]: the argvs as JSON; argv[2]: where the answer goes (what run_probe passes)
ECHO = (
    "import json, sys\n"
    "argvs = json.loads(sys.argv[1])\n"
    "print('engine logs go to stdout')\n"
    "json.dump({'results': {n: len(a) for n, a in argvs.items()}}, open(sys.argv[2], 'w'))\n"
)


def _here(argv: Sequence[str]) -> str:
    return argv[0]


def test_the_probe_runs_in_the_given_interpreter_and_answers_from_its_file() -> None:
    answer = run_probe(sys.executable, ECHO, {"a": ["--x", "1"], "b": []}, what="e's parser")
    assert answer == {"results": {"a": 2, "b": 0}}


def test_a_probe_that_cannot_run_names_the_interpreter_and_shows_its_output() -> None:
    broken = "import sys\nprint('no module e here')\nsys.exit(3)\n"
    with pytest.raises(ProbeFailed) as raised:
        run_probe(sys.executable, broken, {"a": []}, what="e's parser")
    message = str(raised.value)
    assert f"{sys.executable} could not run e's parser (exit 3)" in message
    assert "no module e here" in message


def test_the_verdict_says_accepted_or_refused_in_the_engines_words() -> None:
    def accepts(where: str) -> ParserAnswer:
        return ParserAnswer(None, "1.2", f"{where}: e.parser")

    def refuses(where: str) -> ParserAnswer:
        return ParserAnswer("e refuses it: unknown --x", "1.2", f"{where}: e.parser")

    ok = argv_verdict(SPEC, "e", locate=_here, ask=accepts, install_hint="install e")
    assert (ok.accepted, ok.message, ok.engine_version) == (True, "accepted", "1.2")
    assert ok.checked_with == "/opt/e/bin/python: e.parser"
    no = argv_verdict(SPEC, "e", locate=_here, ask=refuses, install_hint="install e")
    assert (no.accepted, no.message) == (False, "e refuses it: unknown --x")


def test_what_cannot_be_checked_here_says_why_and_asks_nothing() -> None:
    asked: list[str] = []

    def ask(where: str) -> ParserAnswer:
        asked.append(where)
        raise ProbeFailed(f"{where} could not run e's parser (exit 1):\nNo module named e")

    def nowhere(argv: Sequence[str]) -> str:
        raise NoParserHere(f"{argv[0]} is not on PATH here")

    image = SPEC.model_copy(update={"image": "e:1"})
    in_image = argv_verdict(image, "e", locate=_here, ask=ask, install_hint="install e")
    assert in_image.accepted is None and "image e:1" in in_image.message
    missing = argv_verdict(SPEC, "e", locate=nowhere, ask=ask, install_hint="install e")
    assert (missing.accepted, missing.message) == (None, "/opt/e/bin/python is not on PATH here")
    assert asked == []
    failed = argv_verdict(SPEC, "e", locate=_here, ask=ask, install_hint="install e there")
    assert failed.accepted is None and failed.checked_with == "/opt/e/bin/python"
    assert failed.message.endswith("No module named e\ninstall e there")
