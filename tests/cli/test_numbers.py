"""`inferx bench` numbers and flags: one typed parser, vLLM's rate inf, --burstiness, --ramp,
--resume, and --shared-prefix against a server without /detokenize (issue 27, sections 4, 6).

Every numeric flag goes through ``cli/numbers.py``: nan, a negative, an inf where
inf means nothing, or a count past ``config/bounds.py`` (``--num-prompts 1e13``)
is refused while the command line is parsed, exit 2, one line naming the flag;
the config file path refuses the same numbers. ``--request-rate inf`` (and
``request_rate: [.inf]``) is vLLM's "every request at once".
"""

from __future__ import annotations

import contextlib
import json
import math
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tokenizer_fixtures import train_tokenizer

from inferx_core.cli.app import build_parser, main
from inferx_core.cli.bench import bench_config_from_args
from inferx_core.config.bounds import MAX_CONCURRENCY, MAX_PROMPTS, MAX_TOKENS
from inferx_core.config.loader import ConfigError, parse_config_text
from inferx_core.config.points import LoadPoint, load_points
from inferx_core.errors import UserFacingError
from inferx_core.results.files import read_result
from inferx_core.testing import ServerProcess

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOWHERE = "http://127.0.0.1:9"  # nothing listens: a run that got past parsing fails to connect


@pytest.fixture(scope="module")
def server():
    with ServerProcess(ttft_ms=1, itl_ms=1) as srv:
        yield srv


def bench(*flags: str, base_url: str = NOWHERE) -> list[str]:
    return ["bench", "--base-url", base_url, "--no-progress", "--no-telemetry", *flags]


def refused_while_parsing(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``inferx ARGV`` stops in argparse with exit 2 and one error line; returns that line."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


# -- the typed parser: every numeric flag, every bad class --------------------------------

# flag -> values it must refuse (each class: nan, inf, negative or zero, past the limit);
# --percentiles is parsed here and range-checked by the config (tests/cli/test_bad_input.py)
REFUSED = {
    "--num-prompts": [
        "nan",
        "inf",
        "0",
        "-5",
        "1e13",
        "10000000000000",
        str(MAX_PROMPTS + 1),
        "1.5",
    ],
    "--concurrency": ["nan", "0", "-1", "1,-1", str(MAX_CONCURRENCY + 1), "1e300"],
    "--request-rate": ["nan", "-inf", "0", "-2", "1,nan", "-1e-9"],
    "--max-concurrency": ["nan", "0", "-3", "1e9"],
    "--warmup": ["nan", "-1", "1e13"],
    "--isl": ["nan", "0", "-8", str(MAX_TOKENS + 1), "9" * 5000],
    "--osl": ["inf", "0", "1e12"],
    "--duration": ["nan", "inf", "0", "-1"],
    "--timeout": ["nan", "inf", "-0.5"],
    "--first-token-timeout": ["nan", "inf", "0"],
    "--idle-timeout": ["nan", "inf", "0"],
    "--range-ratio": ["nan", "inf", "-0.1", "1.5"],
    "--seed": ["nan", "-1", "1e30"],
    "--num-gpus": ["nan", "0", "-2"],
    "--gpus": ["-1", "nan"],
    "--repeats": ["nan", "0", "1e9"],
    "--workers": ["0", "513", "nan"],
    "--burstiness": ["nan", "inf", "0", "-1"],
    "--ramp-start-rps": ["nan", "inf", "0"],
    "--shared-prefix": ["-1", "nan", "1e12"],
    "--prefix-groups": ["0", "nan", "1e13"],
    "--turns": ["0", "nan", "1e9"],
    "--think-time": ["-1", "nan", "inf"],
    "--turn-isl": ["0", "nan"],
    "--trace-speedup": ["0", "nan", "inf"],
    "--max-model-len": ["0", "nan", "1e12"],
    "--slo": ["ttft_ms=nan", "ttft_ms=-1", "tpot_ms=inf"],
}


@pytest.mark.parametrize(
    ("flag", "value"), [(f, v) for f, values in REFUSED.items() for v in values]
)
def test_a_bad_number_is_refused_while_parsing_naming_the_flag(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused_while_parsing(bench(f"{flag}={value}"), capsys)
    assert line.startswith("inferx bench: error: argument ") and flag in line


def test_num_prompts_1e13_names_the_limit_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the URL has no server: an error about the number, not the connection, shows that
    # nothing was built or sent
    line = refused_while_parsing(bench("--num-prompts", "1e13"), capsys)
    assert f"<= {MAX_PROMPTS}" in line and "over the limit" in line


@FAST
@given(
    flag=st.sampled_from(sorted(REFUSED)),
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(-(10**30), 10**30).map(str),
        st.text(alphabet=string.digits + "e.-+,nai", max_size=10),
    ),
)
@example(flag="--request-rate", value="nan")
@example(flag="--duration", value="inf")
@example(flag="--range-ratio", value="nan")
def test_any_number_parses_or_is_refused_in_one_line(flag: str, value: str) -> None:
    """Whatever the text, the parser gives a finite number (inf only as a rate) or exits 2;
    what it gives builds a config or is a user error: never another exception, never nan."""
    parser = build_parser()
    try:
        args = parser.parse_args(bench(f"{flag}={value}"))
    except SystemExit as exc:
        assert exc.code == 2
        return
    for name, parsed in vars(args).items():
        for item in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(item, float):
                assert not math.isnan(item), name
                assert not math.isinf(item) or name == "request_rate", name
    # a cross-field rule (a ramp without a rate, inf without a count) is a user error
    with contextlib.suppress(UserFacingError):
        bench_config_from_args(args)


def test_whole_numbers_may_be_written_with_an_exponent() -> None:
    args = build_parser().parse_args(bench("--num-prompts", "1e3", "--concurrency", "2,1e1"))
    assert args.num_prompts == 1000 and args.concurrency == [2, 10]


# -- the config file path: the same numbers refused --------------------------------------


@pytest.mark.parametrize(
    ("load", "says"),
    [
        ("{request_rate: [.nan]}", "request rates must be > 0"),
        ("{request_rate: [1, .nan], num_prompts: 4}", "request rates must be > 0"),
        ("{request_rate: [-.inf], num_prompts: 4}", "request rates must be > 0"),
        ("{request_rate: [.inf]}", "give num_prompts"),
        ("{num_prompts: 10000000000000}", f"less than or equal to {MAX_PROMPTS}"),
        ("{concurrency: [1000000]}", f"less than or equal to {MAX_CONCURRENCY}"),
        ("{concurrency: [100000], prompts_per_concurrency: 20}", "over the limit"),
        ("{duration_s: .inf}", "finite number"),
        ("{request_timeout_s: .nan}", "finite number"),
        ("{request_rate: [2], burstiness: .inf}", "finite number"),
        ("{request_rate: [2, .inf], ramp: linear, ramp_start_rps: 1}", "finite request rates"),
    ],
)
def test_the_config_refuses_the_same_numbers(load: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_config_text(f"base_url: {NOWHERE}\nload: {load}\n", "bench.yaml")


def test_workload_numbers_in_a_config_are_bounded_too() -> None:
    for workload in ("{isl: 100000000000}", "{seed: -1}", "{range_ratio: .nan}"):
        with pytest.raises(ConfigError):
            parse_config_text(f"base_url: {NOWHERE}\nworkload: {workload}\n", "bench.yaml")


# -- rate inf: vLLM's "every request at once" --------------------------------------------


def test_rate_inf_in_yaml_is_the_same_point_as_on_the_command_line() -> None:
    text = f"base_url: {NOWHERE}\nload: {{request_rate: [2, .inf], max_concurrency: 3}}\n"
    config = parse_config_text(text, "bench.yaml")
    from_flags = bench_config_from_args(
        build_parser().parse_args(bench("--request-rate", "2,inf", "--max-concurrency", "3"))
    )
    expected = [LoadPoint(request_rate=2.0, max_concurrency=3), LoadPoint(concurrency=3)]
    assert load_points(config.load) == load_points(from_flags.load) == expected
    uncapped = parse_config_text(
        f"base_url: {NOWHERE}\nload: {{request_rate: [.inf], num_prompts: 7}}\n", "b.yaml"
    )
    assert load_points(uncapped.load) == [LoadPoint(concurrency=7)]  # all seven at once


def test_request_rate_inf_sends_every_request_at_once(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = bench("--request-rate", "inf", "--num-prompts", "6", "--isl", "16", "--osl", "4",
                 "--output", str(tmp_path), base_url=server.base_url)  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    [path] = tmp_path.glob("*.json")
    result = read_result(path).flat()
    assert result["status"] == "ok" and result["completed"] == 6
    # as vLLM writes it: rate "inf", and every prompt in flight at once
    assert result["request_rate"] == "inf" and result["max_concurrency"] == 6


def test_request_rate_inf_without_a_count_says_what_to_add(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(bench("--request-rate", "inf")) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "num_prompts" in err and "max_concurrency" in err


# -- the flags issue "workloads" left out ---------------------------------------------------


def test_burstiness_reaches_the_schedule_and_the_flat_result(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = bench("--request-rate", "50", "--burstiness", "0.5", "--num-prompts", "6",
                 "--isl", "16", "--osl", "4", "--output", str(tmp_path),
                 base_url=server.base_url)  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    [path] = tmp_path.glob("*.json")
    result = read_result(path).flat()
    assert result["arrival"] == "gamma(burstiness=0.5)"
    assert result["burstiness"] == 0.5  # vLLM's result field


def test_ramp_flags_map_onto_the_config_with_its_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(
        bench("--request-rate", "8", "--ramp", "exponential", "--ramp-start-rps", "0.5")
    )
    load = bench_config_from_args(args).load
    assert (load.ramp, load.ramp_start_rps, load.request_rate) == ("exponential", 0.5, [8.0])
    assert main(bench("--request-rate", "8", "--ramp", "linear")) == 2  # the config's rule
    assert "ramp_start_rps" in capsys.readouterr().err
    for flags in (("--burstiness", "2"), ("--ramp", "linear", "--ramp-start-rps", "1")):
        assert main(bench("--concurrency", "2", *flags)) == 2  # open loop only, like --arrival
        err = capsys.readouterr().err
        assert "open loop" in err and flags[0] in err and "Traceback" not in err


def test_resume_skips_complete_points_and_runs_the_rest(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--isl", "16", "--osl", "4", "--num-prompts", "4", "--output", str(tmp_path))
    assert main(bench("--concurrency", "1", *common, base_url=server.base_url)) == 0
    [first] = tmp_path.glob("*-c1.json")
    before = first.read_bytes()
    capsys.readouterr()
    again = bench("--concurrency", "1,2", "--resume", *common, base_url=server.base_url)
    assert main(again) == 0
    out = capsys.readouterr().out
    assert f"skipped (already complete, --resume): {first.stem}" in out
    assert first.read_bytes() == before  # not run again
    assert read_result(next(tmp_path.glob("*-c2.json"))).status == "ok"  # the missing one ran
    # without --resume both run again
    assert main(bench("--concurrency", "1,2", *common, base_url=server.base_url)) == 0
    assert first.read_bytes() != before


def test_resume_with_nothing_left_sends_nothing(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--isl", "16", "--osl", "4", "--num-prompts", "2", "--output", str(tmp_path))
    assert main(bench("--concurrency", "1", *common, base_url=server.base_url)) == 0
    capsys.readouterr()
    assert main(bench("--concurrency", "1", "--resume", "--json", *common,
                      base_url=server.base_url)) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == []


# -- --shared-prefix against a server without /detokenize ------------------------------------


def test_shared_prefix_without_detokenize_is_one_line_naming_the_fix(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the scripted server answers /tokenize and has no /detokenize (404)
    argv = bench("--shared-prefix", "8", "--num-prompts", "4", "--isl", "32", "--osl", "4",
                 "--output", str(tmp_path), base_url=server.base_url)  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "detokenize" in err and "--tokenizer" in err and "--shared-prefix" in err


def test_shared_prefix_with_a_local_tokenizer_runs_against_that_server(
    server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokenizer = tmp_path / "tokenizer.json"
    train_tokenizer().save(str(tokenizer))
    argv = bench("--shared-prefix", "8", "--num-prompts", "4", "--isl", "32", "--osl", "4",
                 "--tokenizer", str(tokenizer), "--output", str(tmp_path / "out"),
                 base_url=server.base_url)  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    [path] = (tmp_path / "out").glob("*.json")
    result = read_result(path)
    assert result.status == "ok"
    notes = " ".join(result.workload.notes)
    assert "local tokenizer" in notes and "shared prefixes" in notes


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "c.yaml", "--repeats", "nan"],
        ["run", "c.yaml", "--repeats", "0"],
        ["run", "c.yaml", "--repeats", "1e9"],
        ["run", "c.yaml", "--executor", "slurm", "--gpus-per-node", "-1"],
        ["run", "c.yaml", "--executor", "slurm", "--max-parallel", "0"],
        ["run", "c.yaml", "--executor", "slurm", "--client-nodes", "nan"],
        ["run", "c.yaml", "--tp", "0"],
        ["plan", "c.yaml", "--max-concurrency", "-4"],
        ["demo", "--isl", "1e13"],
        ["demo", "--num-prompts", "10000000000000"],
        ["demo", "--concurrency", "1,nan"],
        ["run-job", "m.json", "--index", "-1"],
    ],
)
def test_inferx_run_plan_and_demo_numbers_use_the_same_parser(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused_while_parsing(argv, capsys)
    assert line.startswith(f"inferx {argv[0]}: error: argument ")
