"""No traceback for user input: every mistake is an error naming the field or file, exit 2.

The cases the issue found (bad --base-url, --percentiles 150, dataset
problems, isl above the server's max length, --engine/--gpus dropped,
--dataset without --workload dataset, open-loop flags on a closed loop),
then hypothesis: generated bad URLs, percentiles, config documents and
dataset lines through the CLI and the config loader never raise anything
but a user error.
"""

from __future__ import annotations

import contextlib
import json
import re
import string
from pathlib import Path
from typing import Any

import fake_engine
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferx_core.cli.app import main
from inferx_core.cli.bench import bench_config_from_args
from inferx_core.config.loader import ConfigError, parse_config_text
from inferx_core.config.models import RunConfig
from inferx_core.config.sweep import SweepConfig
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.dataset import DatasetError, load_jsonl_dataset
from inferx_core.pipeline.server.run import run_configs
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform
from inferx_core.testing import ServerProcess

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def server():
    with ServerProcess() as srv:
        yield srv


def bench(*flags: str, base_url: str = "http://127.0.0.1:9") -> list[str]:
    return ["bench", "--base-url", base_url, "--no-progress", "--no-telemetry", *flags]


def exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``inferx ARGV`` exits 2 with one error line and no traceback; returns stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "inferx: error:" in err
    return err


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://", "no host"),
        ("http://127.0.0.1:99999", "not a URL"),
        ("http://[::1:18300", "not a URL"),
        ("ftp://127.0.0.1:8000", "http://"),
        ("http://127.0.0.1:8000/v1?x=1", "no query"),
        ("http://127.0.0.1:80 00", "whitespace"),
    ],
)
def test_bad_base_url_is_an_error_naming_it(
    url: str, says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = exits_2(bench("--output", str(tmp_path), base_url=url), capsys)
    assert "base_url" in err and says in err
    assert not list(tmp_path.iterdir())


def test_trailing_space_in_base_url_is_forgiven(server: ServerProcess, tmp_path: Path) -> None:
    flags = ["--isl", "8", "--osl", "2", "--num-prompts", "2", "--output", str(tmp_path)]
    assert main(bench(*flags, base_url=server.base_url + " ")) == 0


@pytest.mark.parametrize("value", ["150", "-1", "nan", "50,101"])
def test_percentiles_out_of_range_fail_before_any_request(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    err = exits_2(bench("--percentiles", value, "--output", str(tmp_path)), capsys)
    assert "percentiles" in err and "[0, 100]" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read dataset|no such dataset"),  # missing file
        ("", "no records"),
        ('{"prompt": "hi"}\n{not json\n', "jsonl:2: invalid JSON"),
        ('{"messages": "hi"}\n', "'messages' must be a non-empty list"),
        ('{"prompt": "hi", "output_len": -3}\n', "output_len"),
        ("dir", "Is a directory|folder"),  # a folder may be an HF save_to_disk dataset
    ],
)
def test_dataset_problems_exit_2_in_bench_and_validate(
    content: str | None, says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "prompts.jsonl"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    err = exits_2(bench("--dataset", str(path), "--output", str(tmp_path / "out")), capsys)
    assert str(path) in err and re.search(says, err)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"engine": "vllm", "model": "m", "workload": {
        "kind": "dataset", "dataset": str(path)}}))  # fmt: skip
    err = exits_2(["validate", str(config)], capsys)
    assert str(path) in err and re.search(says, err)


def test_inferx_run_reads_the_dataset_before_launching(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": 3}\n')
    data = {"engine": "fake", "model": "m", "workload": {"dataset": str(path)}}
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("fake", fake_engine)])
    out = tmp_path / "out"
    summary = run_configs([RunConfig.model_validate(data)], pm=pm, platform=Platform(),
                          output_dir=out)  # fmt: skip
    [failed] = summary.outcomes
    assert failed.status == "failed" and "jsonl:1" in failed.result.failure_reason
    assert not (out / "servers").exists()  # no engine log, no run folder: nothing launched
    config = tmp_path / "run.json"
    config.write_text(json.dumps({**data, "engine": "vllm", "output_dir": str(tmp_path / "o2")}))
    err = exits_2(["run", str(config)], capsys)  # the CLI refuses the whole run up front
    assert "jsonl:1" in err and not (tmp_path / "o2").exists()


def test_isl_above_the_servers_max_model_len_is_refused(
    server: ServerProcess, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the scripted server reports max_model_len 131072 in /v1/models, as vLLM does
    flags = ["--isl", "2000000", "--osl", "8", "--output", str(tmp_path)]
    err = exits_2(bench(*flags, base_url=server.base_url), capsys)
    assert "131072" in err and "2000008" in err and "isl" in err
    assert not list(tmp_path.iterdir())


def test_isl_above_max_model_len_of_a_run_config_fails_validate(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("engine: vllm\nmodel: m\nmax_model_len: 4096\nworkload: {isl: 4096}\n")
    err = exits_2(["validate", str(config)], capsys)
    assert "max_model_len 4096" in err and "5120" in err  # 4096 + the default osl 1024


def test_engine_and_gpus_flags_reach_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    from inferx_core.cli.app import build_parser

    args = build_parser().parse_args(bench("--engine", "vllm", "--gpus", "3"))
    config = bench_config_from_args(args)
    assert config.engine == "vllm" and config.gpus == [3]
    err = exits_2(bench("--engine", "vlm", "--model", "m", "--isl", "8", "--osl", "2"), capsys)
    assert "vlm" in err and "vllm" in err  # the known engines are listed


def test_dataset_alone_implies_a_dataset_workload_and_a_conflict_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from inferx_core.cli.app import build_parser

    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello"}\n')
    config = bench_config_from_args(build_parser().parse_args(bench("--dataset", str(path))))
    assert config.workload.kind == "dataset"
    err = exits_2(bench("--dataset", str(path), "--workload", "random"), capsys)
    assert "kind: dataset" in err


@pytest.mark.parametrize("flag", [["--arrival", "constant"], ["--max-concurrency", "4"]])
def test_open_loop_flags_on_a_closed_loop_are_errors(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = exits_2(bench("--concurrency", "2", *flag), capsys)
    assert flag[0] in err and "--request-rate" in err


# -- generated inputs -----------------------------------------------------------------------
hosts = st.sampled_from(["127.0.0.1", "localhost", "[::1]", "", "[::1", "::1", "h st", "a:b"])
ports = st.one_of(
    st.none(), st.integers(-5, 200000).map(str), st.text(string.printable, max_size=6)
)
schemes = st.sampled_from(["http://", "https://", "", "htp://", "http:/", "HTTP://", "ws://"])
urls = st.builds(
    lambda s, h, p, tail: f"{s}{h}{'' if p is None else ':' + p}{tail}",
    schemes,
    hosts,
    ports,
    st.sampled_from(["", "/", " ", "\t", "/v1", "?q", "#f", "%"]),
)


@FAST
@given(url=urls)
def test_any_base_url_is_accepted_or_refused_plainly(url: str) -> None:
    from inferx_core.cli.app import build_parser

    args = build_parser().parse_args(bench(base_url=url))
    try:
        config = bench_config_from_args(args)
    except UserFacingError as exc:
        assert "base_url" in str(exc) or "--base-url" in str(exc)
        return
    import httpx

    httpx.URL(config.base_url + "/v1/models")  # what was accepted can be requested


@FAST
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=4))
def test_any_percentiles_are_accepted_or_refused_plainly(values: list[float]) -> None:
    from inferx_core.cli.app import build_parser

    text = ",".join(repr(v) for v in values)
    args = build_parser().parse_args(bench(f"--percentiles={text}"))
    try:
        config = bench_config_from_args(args)
    except UserFacingError as exc:
        assert "percentiles" in str(exc)
        return
    assert all(0 <= p <= 100 for p in config.percentiles)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
run_keys = st.sampled_from(
    ["engine", "model", "port", "max_model_len", "workload", "load", "parallelism", "gpu_ids",
     "engine_env", "stop_grace_s", "base", "sweep", "base_url", "percentiles", "headers", "isl"]
)  # fmt: skip
sweep_docs = st.fixed_dictionaries(
    {"base": st.fixed_dictionaries({"engine": st.just("vllm"), "model": st.just("m")},
                                   optional={"max_model_len": st.integers(-2, 5000)})},
    optional={"matrix": st.fixed_dictionaries({}, optional={
        "scenarios": st.lists(st.fixed_dictionaries(
            {"name": st.text(string.ascii_lowercase, min_size=1, max_size=3)},
            optional={"isl": st.integers(-5, 9000), "osl": st.integers(-5, 9000)}), max_size=3),
        "tp": st.lists(st.integers(-1, 9), max_size=3),
        "concurrency": st.lists(st.integers(-1, 64), max_size=3),
    })},
)  # fmt: skip
workload_docs = st.fixed_dictionaries(
    {"engine": st.just("vllm"), "model": st.just("m")},
    optional={
        "workload": st.dictionaries(
            st.sampled_from(["isl", "osl", "kind", "dataset", "range_ratio", "range_semantics"]),
            json_values,
            max_size=4,
        ),
        "load": st.dictionaries(
            st.sampled_from(["concurrency", "request_rate", "num_prompts", "duration_s"]),
            json_values,
            max_size=3,
        ),
        "max_model_len": json_values,
    },
)


@FAST
@given(
    doc=st.one_of(
        st.dictionaries(run_keys, json_values, max_size=5), workload_docs, sweep_docs, json_values
    )
)
def test_the_config_loader_raises_only_config_errors(doc: Any) -> None:
    text = json.dumps(doc, allow_nan=True)
    try:
        config = parse_config_text(text, "generated.json")
    except ConfigError as exc:
        assert str(exc).startswith("invalid config generated.json")
        return
    if isinstance(config, SweepConfig):
        with contextlib.suppress(UserFacingError):  # or a SweepError naming the combination
            config.expand()


def test_a_sweep_combination_that_cannot_run_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({
        "base": {"engine": "vllm", "model": "m", "max_model_len": 2048},
        "matrix": {"scenarios": [{"name": "short", "isl": 512, "osl": 128},
                                 {"name": "long", "isl": 4096, "osl": 128}]},
    }))  # fmt: skip
    err = exits_2(["validate", str(config)], capsys)
    assert "sweep combination #2 (scenario=long)" in err and "max_model_len 2048" in err


@FAST
@given(lines=st.lists(json_values.map(json.dumps) | st.text(max_size=20), min_size=0, max_size=4))
def test_any_dataset_file_loads_or_names_its_problem(lines: list[str], tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("ds") / "d.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        records = load_jsonl_dataset(path)
    except DatasetError as exc:
        assert str(path) in str(exc)
        return
    assert records


BENCH_FLAGS = ("--isl", "--osl", "--num-prompts", "--concurrency", "--request-rate",
               "--percentiles", "--duration", "--timeout", "--first-token-timeout",
               "--idle-timeout", "--range-ratio", "--slo", "--seed", "--warmup", "--num-gpus",
               "--gpus", "--max-concurrency", "--arrival", "--dataset", "--api")  # fmt: skip
flag_values = st.one_of(
    st.integers(-(10**9), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=string.printable, max_size=12),
    st.sampled_from(["0", "-1", "1,2", "1,,x", "nan", "inf", "ttft_ms=5", "a=b", "", "chat"]),
)


@FAST
@given(flags=st.lists(st.tuples(st.sampled_from(BENCH_FLAGS), flag_values), max_size=4))
def test_generated_bench_command_lines_never_raise(
    flags: list[tuple[str, str]], tmp_path_factory
) -> None:
    """Whatever the flags, `inferx bench` exits 2 (a usage or user error; the server at the
    URL is never there) and never lets an exception out."""
    out = tmp_path_factory.mktemp("out")
    argv = ["bench", "--base-url", "http://127.0.0.1:9", "--no-progress", "--no-telemetry",
            "--output", str(out)]  # fmt: skip
    for flag, value in flags:
        argv.append(f"{flag}={value}")
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage error: exit 2, no traceback
        code = exc.code
    assert code == 2


def test_run_wait_without_an_executor_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("engine: vllm\nmodel: m\n")
    err = exits_2(["run", str(config), "--wait", "--dry-run"], capsys)
    assert "--wait" in err and "--executor" in err
