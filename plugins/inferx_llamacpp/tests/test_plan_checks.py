"""What llama-server would refuse after loading, refused when the plan is made: the model file,
the context size, a reserved flag in any spelling, a Hugging Face directory it cannot convert."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferx_core import LoadProfile, Platform, ServerConfig, UserFacingError
from inferx_llamacpp import engine_paths, flags, hooks
from inferx_llamacpp.gguf_model import convert
from inferx_llamacpp.model_checks import GGUF_MAGIC, INT32_MAX


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(engine_paths.BINARY_ENV, str(tmp_path / "no-binary"))


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(GGUF_MAGIC + bytes(20))
    return path


def _file(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def plan(model: str | Path, load: LoadProfile | None = None, **kw: object) -> list[str]:
    server = ServerConfig(engine="llamacpp", model=str(model), port=8123, **kw)  # type: ignore[arg-type]
    return list(hooks.inferx_engine_launch_spec(server=server, platform=Platform(), load=load).argv)


def test_a_gguf_file_plans(gguf: Path) -> None:
    argv = plan(gguf)
    assert argv[argv.index("--model") + 1] == str(gguf)


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: d / "missing.gguf", "no such file"),
        (lambda d: _file(d / "empty.gguf", b""), "is empty"),
        (lambda d: d, "is a directory that is not a Hugging Face Llama"),
        (lambda d: _file(d / "x.gguf", b"PK\x03\x04zip"), "not a GGUF"),
    ],
    ids=["missing", "empty", "directory", "not-gguf"],
)
def test_a_model_llama_server_cannot_load_is_refused_at_plan_time(
    tmp_path: Path, make: object, why: str
) -> None:
    model = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(UserFacingError, match=rf"^model '{model}'.*{why}.*give model a \.gguf"):
        plan(model)


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)  # opening it to read the magic bytes would block until a writer came
    with pytest.raises(UserFacingError, match="not a regular file"):
        plan(fifo)


def test_a_container_launch_checks_no_local_path() -> None:
    argv = plan("/models/in-the-image.gguf", image="ghcr.io/ggml-org/llama.cpp:server")
    assert "/models/in-the-image.gguf" in argv


@settings(max_examples=30, deadline=None)
@given(length=st.integers(1, 2**40), slots=st.integers(1, 4096))
def test_a_context_past_llama_servers_int_is_an_error_naming_both_fields(
    length: int, slots: int
) -> None:
    model = Path(os.environ["XDG_CACHE_HOME"]).parent / "model.gguf"
    model.write_bytes(GGUF_MAGIC + bytes(4))
    if length * slots > INT32_MAX:
        with pytest.raises(UserFacingError, match=r"max_model_len .* max_num_seqs"):
            plan(model, max_model_len=length, max_num_seqs=slots)
    else:
        argv = plan(model, max_model_len=length, max_num_seqs=slots)
        assert int(argv[argv.index("--ctx-size") + 1]) == length * slots <= INT32_MAX


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"extra_argv": ["--ctx-size=99"]}, "max_model_len"),
        ({"extra_argv": ["-c", "99"]}, "max_model_len"),
        ({"extra_argv": ["-c99"]}, "max_model_len"),
        ({"extra_argv": ["--ctx_size", "99"]}, "max_model_len"),
        ({"engine_args": {"c": 99}}, "max_model_len"),
        ({"engine_args": {"-c": 99}}, "max_model_len"),
        ({"engine_args": {"ctx-size": 99}}, "max_model_len"),
        ({"engine_args": {"ctx_size": 99}}, "max_model_len"),
        ({"extra_argv": ["-np", "3"]}, "max_num_seqs"),
        ({"extra_argv": ["-m", "/other.gguf"]}, "model"),
        ({"extra_argv": ["--port=1"]}, "port"),
        ({"extra_argv": ["-no-kvu"]}, "max_model_len"),
        ({"engine_args": {"no-cache-prompt": True}}, "prefix_caching"),
        ({"engine_args": {"cram": 10}}, "prefix_caching"),
        ({"extra_argv": ["-sm", "row"]}, "parallelism"),
    ],
)
def test_a_reserved_flag_in_any_spelling_is_refused(gguf: Path, given: dict, field: str) -> None:
    with pytest.raises(
        UserFacingError, match=rf"llama-server's --\S+ is set from the config field {field}"
    ):
        plan(gguf, **given)


def test_engine_args_keys_are_flags_and_a_key_with_equals_is_refused(gguf: Path) -> None:
    argv = plan(gguf, engine_args={"threads": 2, "-fa": "on"}, extra_argv=["-cb", "-t", "-1"])
    assert argv[argv.index("--threads") + 1] == "2" and argv[argv.index("-fa") + 1] == "on"
    assert flags.reserved_as("-cb", flags.RESERVED) is None  # --cont-batching, not -c + "b"
    with pytest.raises(UserFacingError, match=r"engine_args.threads=2: a key with '='"):
        plan(gguf, engine_args={"threads=2": True})


def test_a_two_value_context_never_reaches_the_server(gguf: Path) -> None:
    """Every argv the plugin does plan names the context once, whatever the user added."""
    argv = plan(gguf, max_model_len=512, max_num_seqs=2, extra_argv=["-cb", "--threads", "1"])
    spelled = [
        a for a in argv if flags.reserved_as(a, flags.RESERVED) == ("--ctx-size", "max_model_len")
    ]
    assert spelled == ["--ctx-size"]


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from inferx_core.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")


@pytest.mark.parametrize(
    ("break_it", "names"),
    [
        (lambda d: _drop_key(d / "config.json", "hidden_size"), "config.json: field 'hidden_size'"),
        (
            lambda d: _set_key(d / "config.json", "num_hidden_layers", "x"),
            "config.json: field 'num_hidden_layers' is 'x'",
        ),
        (lambda d: (d / "tokenizer.json").write_text("{not json"), "tokenizer.json: not readable"),
        (lambda d: (d / "model.safetensors").write_bytes(b"junk"), "model.safetensors: not"),
    ],
    ids=["missing-field", "bad-field", "bad-tokenizer", "bad-weights"],
)
def test_a_bad_hugging_face_directory_names_the_file_and_field(
    tiny_hf: Path, tmp_path: Path, break_it: object, names: str
) -> None:
    broken = tmp_path / "broken-llama"
    shutil.copytree(tiny_hf, broken)
    break_it(broken)  # type: ignore[operator]
    with pytest.raises(UserFacingError, match=rf"model {broken}: cannot write it as GGUF: {names}"):
        convert(broken, tmp_path / "out.gguf")
    assert not (tmp_path / "out.gguf").exists() and not list(tmp_path.glob(".out.gguf.*"))
    with pytest.raises(UserFacingError, match=names):  # through the plan, the same words
        plan(broken)


def _drop_key(path: Path, key: str) -> None:
    data = json.loads(path.read_text())
    del data[key]
    path.write_text(json.dumps(data))


def _set_key(path: Path, key: str, value: object) -> None:
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))


BROKEN_CONFIG = '{\n  "model_type": "llama",\n  "hidden_size": 64,,\n}\n'


def test_a_broken_config_json_is_named_with_its_json_error(
    tiny_hf: Path, tmp_path: Path, gguf: Path
) -> None:
    """A typo in a Hugging Face directory's config.json is said as such (FIXER-3 item 3):
    the file, the JSON error with its line and column, and the fix, never "not a Llama
    directory" (which read the parse error as another kind of model and hid it)."""
    broken = tmp_path / "broken-llama"
    shutil.copytree(tiny_hf, broken)
    (broken / "config.json").write_text(BROKEN_CONFIG)
    where = (
        rf"{broken}/config.json: not readable JSON: Expecting property name .* at line 3 column 21"
    )
    fix = r"correct it there, or give llama.cpp a \.gguf file instead"
    with pytest.raises(UserFacingError, match=rf"^model '{broken}': {where}: {fix}$") as raised:
        plan(broken)
    assert "not a Hugging Face Llama" not in str(raised.value)
    with pytest.raises(UserFacingError, match=rf"{where}: {fix}"):  # the converter alike
        convert(broken, tmp_path / "out.gguf")
    draft = {"method": "draft_model", "draft_model": str(broken), "num_speculative_tokens": 2}
    with pytest.raises(UserFacingError, match=rf"^speculative.draft_model '{broken}': {where}"):
        plan(gguf, speculative=draft)


@pytest.mark.parametrize(
    ("config", "why"),
    [
        (None, "it has no config.json"),
        ('{"model_type": "mistral"}', "its config.json has model_type 'mistral', not 'llama'"),
    ],
    ids=["no-config", "not-llama"],
)
def test_a_directory_of_another_kind_says_what_it_holds(
    tmp_path: Path, config: str | None, why: str
) -> None:
    model = tmp_path / "other"
    model.mkdir()
    if config is not None:
        (model / "config.json").write_text(config)
    with pytest.raises(UserFacingError, match=rf"not a Hugging Face Llama directory .*: {why};"):
        plan(model)
