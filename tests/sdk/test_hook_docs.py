"""docs/hooks.md and the hook specs stay in step, and every documented example runs.

- every hook spec (``inferx_*`` in ``inferx_core.sdk.hookspecs``) has exactly one
  ``## inferx_<name>`` section in docs/hooks.md, and no section names a hook
  that does not exist;
- each section has a ```python example that compiles, imports only
  inferx_core and the standard library, executes in a fresh module, registers
  as a plugin in strict mode and answers with the documented types;
- every spec docstring follows the template (When/Params/Returns/Combine/
  Implement) and its Combine text names the hook's kind (firstresult or list);
- the ```python blocks of docs/writing-a-plugin.md compile, and the ```yaml
  and ```json examples in docs/configuration.md are valid configs.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from inferx_core import hookimpl
from inferx_core.config.models import LoadProfile, ServerConfig
from inferx_core.sdk import hookspecs
from inferx_core.sdk.argv_check import ArgvVerdict
from inferx_core.sdk.engine import EngineInfo
from inferx_core.sdk.evaluator import Evaluator, EvaluatorInfo
from inferx_core.sdk.executor import Executor, ExecutorInfo
from inferx_core.sdk.fixes import Fix, FixContext, apply_fixes
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.launcher import Launcher, LauncherInfo
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Accelerator, Platform
from inferx_core.sdk.probes import EngineMetricsMap, ReadinessProbe
from inferx_core.sdk.roles import RoleContext
from inferx_core.sdk.sampler import Sampler
from inferx_core.sdk.server_timing_api import ServerTiming
from inferx_core.sdk.tokenize_api import TokenizeEndpoint

DOCS = Path(__file__).parents[2] / "docs"
HOOKS_MD = DOCS / "hooks.md"
CONFIG_MD = DOCS / "configuration.md"

TEMPLATE_LABELS = ("When:", "Params:", "Returns:", "Combine:", "Implement:")
ENV_VARS = ("INFERX_PLUGINS", "INFERX_DISABLE_PLUGINS", "INFERX_STRICT_PLUGINS")
DEFAULT_ENGINE = "example-tpu"


# -- reading the specs and the markdown ---------------------------------------
def spec_functions() -> dict[str, Callable[..., Any]]:
    return {
        name: fn
        for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
        if name.startswith("inferx_") and fn.__module__ == hookspecs.__name__
    }


SPECS = spec_functions()


def is_firstresult(name: str) -> bool:
    opts = getattr(SPECS[name], f"{hookspecs.hookspec.project_name}_spec", None)
    assert opts is not None, f"{name} is not marked with @hookspec"
    return bool(opts.get("firstresult"))


def _lines_outside_fences(text: str) -> Iterator[tuple[str, bool]]:
    """Each line with a flag: True when it is inside a fenced code block."""
    fence: str | None = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is None and stripped.startswith("```"):
            fence = "```"
            yield line, True
            continue
        if fence is not None and stripped.startswith(fence):
            fence = None
            yield line, True
            continue
        yield line, fence is not None


def sections(text: str) -> dict[str, str]:
    """``## heading`` (outside code fences) -> the text up to the next ``##`` heading."""
    out: dict[str, list[str]] = {}
    current = "(preamble)"
    out[current] = []
    for line, fenced in _lines_outside_fences(text):
        if not fenced and line.startswith("## "):
            current = line[3:].strip()
            assert current not in out, f"docs/hooks.md has two sections '## {current}'"
            out[current] = []
            continue
        out[current].append(line)
    return {name: "\n".join(body) for name, body in out.items()}


_BLOCK = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^```\s*$", re.S | re.M)


def code_blocks(text: str, lang: str) -> list[str]:
    return [m.group("body") for m in _BLOCK.finditer(text) if m.group("lang") == lang]


HOOKS_TEXT = HOOKS_MD.read_text(encoding="utf-8")
SECTIONS = sections(HOOKS_TEXT)
HOOK_SECTIONS = {name: body for name, body in SECTIONS.items() if "inferx_" in name}
ALL_PYTHON_BLOCKS = code_blocks(HOOKS_TEXT, "python")


# -- (a) one section per hook, none stale -------------------------------------
def test_specs_found() -> None:
    assert len(SPECS) >= 8, sorted(SPECS)


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_every_hook_has_a_section(hook: str) -> None:
    assert hook in SECTIONS, f"docs/hooks.md lacks a section '## {hook}'"


def test_no_stale_or_misspelt_sections() -> None:
    for heading in HOOK_SECTIONS:
        assert re.fullmatch(r"inferx_\w+", heading), (
            f"heading '## {heading}' must be exactly '## inferx_<hookname>'"
        )
        assert heading in SPECS, (
            f"docs/hooks.md has a section '## {heading}' but hookspecs.py has no such hook"
        )


def test_sections_follow_spec_order() -> None:
    documented = [h for h in SECTIONS if h in SPECS]
    in_source = sorted(SPECS, key=lambda n: inspect.getsourcelines(SPECS[n])[1])
    assert documented == in_source


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_section_names_every_parameter_and_the_kind(hook: str) -> None:
    body = SECTIONS.get(hook, "")
    for param in inspect.signature(SPECS[hook]).parameters:
        assert f"`{param}`" in body, f"## {hook} does not document parameter `{param}`"
    kind = "firstresult" if is_firstresult(hook) else "list"
    assert re.search(rf"\*\*Combine:\*\*\s*{kind}\b", body), (
        f"## {hook}: its **Combine:** paragraph must start with '{kind}'"
    )


def test_plugin_manager_env_vars_documented() -> None:
    for var in ENV_VARS:
        assert f"`{var}`" in HOOKS_TEXT, f"docs/hooks.md does not document {var}"


# -- (b) and (c) examples: present, compile, import, run ----------------------
def _check_imports(source: str, where: str) -> None:
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{where}: relative import"
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        for root in roots:
            assert root == "inferx_core" or root in stdlib, (
                f"{where}: imports {root!r}; examples may import only inferx_core and the stdlib"
            )


def exec_example(source: str, where: str) -> types.ModuleType:
    """Compile, check imports and execute ``source`` as a fresh module."""
    code = compile(source, where, "exec")
    _check_imports(source, where)
    module = types.ModuleType(f"hooks_md_example_{abs(hash(where))}")
    exec(code, module.__dict__)
    defined = [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    ]
    for name in defined:
        assert hasattr(module, name), f"{where}: {name} not importable after exec"
    return module


@pytest.mark.parametrize("index", range(len(ALL_PYTHON_BLOCKS)))
def test_every_python_block_compiles_and_runs(index: int) -> None:
    exec_example(ALL_PYTHON_BLOCKS[index], f"docs/hooks.md python block {index + 1}")


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_section_has_python_example(hook: str) -> None:
    blocks = code_blocks(SECTIONS.get(hook, ""), "python")
    assert blocks, f"## {hook} has no ```python example"
    assert any(re.search(rf"^def {hook}\(", b, re.M) for b in blocks), (
        f"## {hook}: no example defines `def {hook}(`"
    )


def _sample_args(engine: str) -> dict[str, Any]:
    platform = Platform(
        accelerators=(
            Accelerator(vendor="google", index=0, name="Google TPU", arch="tpu"),
            Accelerator(vendor="nvidia", index=0, name="NVIDIA H200", compute_capability="9.0"),
        )
    )
    return {
        "server": ServerConfig(engine=engine, model="org/model", port=9000),
        "platform": platform,
        "load": LoadProfile(concurrency=[1, 8]),
        "spec": LaunchSpec(engine=engine, argv=("serve", "org/model"), port=9000),
        "gpu_ids": [0],
        "engine_pid": None,
        "role": RoleContext(
            kind="disaggregated",
            role="decode",
            replica=0,
            replicas=1,
            node_rank=1,
            nodes=2,
            host="node2",
            head_host="node1",
            dist_port=29500,
            gpus_per_node=8,
            peers={"prefill": ("http://node0:8001",), "decode": ("http://node1:8002",)},
        ),
    }


def _all_of(value: Any, kind: type) -> bool:
    return isinstance(value, list) and all(isinstance(v, kind) for v in value)


def _check_launch_spec(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert isinstance(answer, LaunchSpec)
    assert answer.port == args["server"].port


def _check_samplers(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, Sampler) and answer
    for sampler in answer:
        assert isinstance(sampler.name, str) and sampler.interval_s > 0


def _check_fixes(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, Fix) and answer
    ctx = FixContext(server=args["server"], platform=args["platform"])
    for spec in (args["spec"], args["spec"].model_copy(update={"image": "repo/img:1"})):
        apply_fixes(spec, answer, ctx)


def _check_launchers(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, LauncherInfo) and answer
    for info in answer:
        launcher = info.factory()
        assert isinstance(launcher, Launcher)
        assert isinstance(launcher.describe(args["spec"], tmp_path), dict)


def _check_executors(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, ExecutorInfo) and answer
    for info in answer:
        executor = info.factory({})
        assert isinstance(executor, Executor)
        assert isinstance(executor.describe([], tmp_path), dict)


def _check_evaluators(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, EvaluatorInfo) and answer
    for info in answer:
        assert isinstance(info.factory({}), Evaluator)
        with pytest.raises(ValueError):
            info.factory({"no-such-option": 1})  # unknown options are refused


def _check_engines(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, EngineInfo)


def _check_platform(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert isinstance(answer, Platform)


def _check_readiness(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, ReadinessProbe) and answer


def _check_metrics(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert isinstance(answer, EngineMetricsMap)


def _check_argv_verdict(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert isinstance(answer, ArgvVerdict) and answer.message


def _check_tokenize(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert _all_of(answer, TokenizeEndpoint) and answer


def _check_server_timing(answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    assert isinstance(answer, ServerTiming) and answer.paths()


# What each hook's answer must be; a hook not listed here is only called.
_ANSWER_CHECKS: dict[str, Callable[[Any, dict[str, Any], Path], None]] = {
    "inferx_engines": _check_engines,
    "inferx_platform": _check_platform,
    "inferx_engine_launch_spec": _check_launch_spec,
    "inferx_engine_role_spec": _check_launch_spec,
    "inferx_engine_readiness": _check_readiness,
    "inferx_engine_metrics": _check_metrics,
    "inferx_engine_argv_verdict": _check_argv_verdict,
    "inferx_engine_tokenize_endpoints": _check_tokenize,
    "inferx_engine_server_timing": _check_server_timing,
    "inferx_telemetry_samplers": _check_samplers,
    "inferx_container_fixes": _check_fixes,
    "inferx_launchers": _check_launchers,
    "inferx_executors": _check_executors,
    "inferx_evaluators": _check_evaluators,
}


def _check_answer(hook: str, answer: Any, args: dict[str, Any], tmp_path: Path) -> None:
    check = _ANSWER_CHECKS.get(hook)
    if check is not None:
        check(answer, args, tmp_path)


OTHER_ENGINE = "not-this-plugins-engine"
OTHER_ANSWER = "the other engine's plugin answered"


def _owning_its_engine(module: types.ModuleType, engine: str) -> None:
    """A section shows one engine hook; the plugin it belongs to also registers the engine."""
    if hasattr(module, "inferx_engines"):
        return

    @hookimpl
    def inferx_engines() -> list[EngineInfo]:
        return [EngineInfo(name=engine, description="the docs example's engine")]

    module.inferx_engines = inferx_engines  # type: ignore[attr-defined]


def _other_engine_plugin(hook: str) -> types.ModuleType:
    """Registers OTHER_ENGINE and answers ``hook`` for it."""
    module = types.ModuleType("other_engine_plugin")

    @hookimpl
    def inferx_engines() -> list[EngineInfo]:
        return [EngineInfo(name=OTHER_ENGINE, description="another plugin's engine")]

    @hookimpl
    def answer(server: ServerConfig) -> str:
        return OTHER_ANSWER

    module.inferx_engines = inferx_engines  # type: ignore[attr-defined]
    setattr(module, hook, answer)
    return module


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_section_example_is_a_working_plugin(hook: str, tmp_path: Path) -> None:
    blocks = [b for b in code_blocks(SECTIONS.get(hook, ""), "python") if f"def {hook}(" in b]
    assert blocks, f"## {hook} has no example implementation"
    for block in blocks:
        module = exec_example(block, f"docs/hooks.md ## {hook}")
        engine = getattr(module, "ENGINE", DEFAULT_ENGINE)
        plugins: list[tuple[str, Any]] = [("doc-example", module)]
        if hook in hookspecs.ENGINE_HOOKS:
            _owning_its_engine(module, engine)
            # Registered first, so asked after the example: were the example asked about
            # the other engine, its answer (it checks no engine) would win.
            plugins.insert(0, ("other-engine", _other_engine_plugin(hook)))
        # Strict mode: an unknown hook or a parameter the spec lacks raises.
        pm = get_plugin_manager(
            load_entry_points=False,
            builtins=False,
            extra_plugins=plugins,
            env={"INFERX_STRICT_PLUGINS": "1"},
        )
        record = pm.record_for("doc-example")
        assert record is not None and record.status == "ok", record
        assert hook in record.hooks
        args = _sample_args(engine)
        missing = set(inspect.signature(SPECS[hook]).parameters) - set(args)
        assert not missing, f"add sample values for {sorted(missing)} to _sample_args"
        if is_firstresult(hook):
            owner, answer = pm.call_first(hook, **args)
            assert owner == "doc-example", owner
            assert pm.call_first(hook, **_sample_args(OTHER_ENGINE)) == (
                "other-engine",
                OTHER_ANSWER,
            ), f"## {hook}: the core must ask only the plugin that registered the engine"
        else:
            answers = pm.call_each(hook, **args)
            assert len(answers) == 1, answers
            answer = answers[0][1]
        assert answer is not None, f"## {hook}: the example gave no answer"
        _check_answer(hook, answer, args, tmp_path)


# -- (d) and (e) spec docstrings ----------------------------------------------
def _label_text(doc: str, label: str) -> str:
    """The text after ``label`` up to the next template label."""
    start = doc.index(label) + len(label)
    ends = [doc.find(other, start) for other in TEMPLATE_LABELS]
    end = min([e for e in ends if e != -1], default=len(doc))
    return doc[start:end]


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_spec_docstring_follows_template(hook: str) -> None:
    doc = inspect.getdoc(SPECS[hook]) or ""
    assert doc.splitlines() and doc.splitlines()[0].strip(), f"{hook}: no summary line"
    for label in TEMPLATE_LABELS:
        assert re.search(rf"^\s*{re.escape(label)}", doc, re.M), (
            f"{hook}: docstring lacks a line starting with {label!r}"
        )


@pytest.mark.parametrize("hook", sorted(SPECS))
def test_spec_combine_names_its_kind(hook: str) -> None:
    combine = _label_text(inspect.getdoc(SPECS[hook]) or "", "Combine:")
    if is_firstresult(hook):
        assert "firstresult" in combine, f"{hook} is firstresult; Combine: must say so"
    else:
        assert re.search(r"\blist\b", combine), f"{hook} is a list hook; Combine: must say so"
        assert "firstresult" not in combine, f"{hook} is not firstresult"


# -- writing-a-plugin.md examples ---------------------------------------------
GUIDE_PYTHON_BLOCKS = code_blocks((DOCS / "writing-a-plugin.md").read_text("utf-8"), "python")


@pytest.mark.parametrize("index", range(len(GUIDE_PYTHON_BLOCKS)))
def test_guide_python_blocks_compile(index: int) -> None:
    compile(GUIDE_PYTHON_BLOCKS[index], f"docs/writing-a-plugin.md block {index + 1}", "exec")


# -- configuration.md examples -------------------------------------------------
CONFIG_TEXT = CONFIG_MD.read_text(encoding="utf-8")
CONFIG_EXAMPLES = [("example.yaml", b) for b in code_blocks(CONFIG_TEXT, "yaml")] + [
    ("example.json", b) for b in code_blocks(CONFIG_TEXT, "json")
]


@pytest.mark.parametrize("index", range(len(CONFIG_EXAMPLES)))
def test_configuration_examples_validate(index: int) -> None:
    from inferx_core.config.loader import parse_config_text
    from inferx_core.config.sweep import SweepConfig

    name, text = CONFIG_EXAMPLES[index]
    config = parse_config_text(text, name)
    if isinstance(config, SweepConfig):
        assert config.expand()
