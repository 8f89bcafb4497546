"""Hook specifications: the whole contract between inferx-core and its plugins.

Naming rule: every hook is named for what it answers, ``inferx_<noun>`` or
``inferx_<subject>_<noun>`` (``inferx_engines``, ``inferx_platform``,
``inferx_engine_launch_spec``, ``inferx_engine_argv_verdict``), never for
what it does (no ``register_``, ``detect_``, ``check_``). Engine hooks begin
``inferx_engine_``. Names that broke the rule were renamed before the first
release; :data:`RENAMED_HOOKS` lists them and the plugin manager refuses a
plugin that still implements one, naming the new name (no alias: pluggy
would otherwise call it an unknown hook, or never call it).

Every spec's docstring follows one template, checked by tests:

- first line: what the hook answers;
- ``When:`` when the core calls it;
- ``Params:`` each parameter;
- ``Returns:`` the type and meaning of one implementation's answer;
- ``Combine:`` how answers from several plugins combine (``firstresult``:
  the first non-None answer wins; ``list``: all answers, in call order,
  which pluggy makes last-registered-first and ``tryfirst``/``trylast``
  adjust);
- ``Implement:`` who should implement it.

Engine hooks (:data:`ENGINE_HOOKS`) are asked only of the plugin that
registered ``server.engine`` through ``inferx_engines``, so an
implementation never has to check that the engine is its own.

Implementations may accept any subset of the parameters (pluggy passes only
the ones named). Built-in fallbacks are registered as plugins marked
``trylast``. docs/hooks.md has one section per hook with an example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferx_core.sdk.markers import hookspec

if TYPE_CHECKING:
    from inferx_core.config.models import LoadProfile, ServerConfig
    from inferx_core.sdk.argv_check import ArgvVerdict
    from inferx_core.sdk.engine import EngineInfo
    from inferx_core.sdk.evaluator import EvaluatorInfo
    from inferx_core.sdk.executor import ExecutorInfo
    from inferx_core.sdk.fixes import Fix
    from inferx_core.sdk.launch_spec import LaunchSpec
    from inferx_core.sdk.launcher import LauncherInfo
    from inferx_core.sdk.platform import Platform
    from inferx_core.sdk.probes import EngineMetricsMap, ReadinessProbe
    from inferx_core.sdk.roles import RoleContext
    from inferx_core.sdk.sampler import Sampler
    from inferx_core.sdk.server_timing_api import ServerTiming
    from inferx_core.sdk.tokenize_api import TokenizeEndpoint

#: Old hook name -> its name now. A plugin implementing an old name is refused
#: at registration with the new name in the message; the old one is not called.
RENAMED_HOOKS: dict[str, str] = {
    "inferx_register_engines": "inferx_engines",
    "inferx_detect_platform": "inferx_platform",
    "inferx_engine_check_argv": "inferx_engine_argv_verdict",
}

#: Hooks about one engine: the core calls them only on the plugin that
#: registered ``server.engine`` (plus any wrapper), never on the others.
ENGINE_HOOKS = frozenset(
    {
        "inferx_engine_launch_spec",
        "inferx_engine_readiness",
        "inferx_engine_metrics",
        "inferx_engine_role_spec",
        "inferx_engine_argv_verdict",
        "inferx_engine_tokenize_endpoints",
        "inferx_engine_server_timing",
    }
)


@hookspec
def inferx_engines() -> list[EngineInfo]:
    """Name and describe the engines this plugin can launch.

    When: once per plugin manager, when the core builds its engine registry
    (``inferx plugins``, ``inferx doctor``, and before any launch).
    Params: none.
    Returns: a list of :class:`~inferx_core.sdk.engine.EngineInfo`; the
    ``name`` is what users write as ``engine:`` in a config.
    Combine: list; all answers are collected per plugin. Two different
    distributions claiming one engine name is an error that names both; that
    engine cannot be used until one of them is removed or blocked with
    ``INFERX_DISABLE_PLUGINS``.
    Implement: engine plugins (inferx-vllm, inferx-sglang, inferx-trtllm and
    third-party engines).
    """


@hookspec
def inferx_platform() -> Platform | None:
    """Report the accelerators (and host facts) this plugin can see.

    When: once per run before any launch, and by ``inferx doctor``. Not
    called when the user passes ``--platform FILE``.
    Params: none.
    Returns: a partial :class:`~inferx_core.sdk.platform.Platform`: the
    devices found, software versions (``nccl``, ``cuda``, ``rocm``) and notes
    that explain an absence ("no NVIDIA GPU: libnvidia-ml.so not found").
    Return None (or a platform with only notes) when the vendor library is
    missing; never raise for an absent GPU, it is a normal state.
    Combine: list; the core merges the answers (first host wins, devices and
    notes append, a device reported twice is kept once).
    Implement: vendor plugins (NVML is built in; inferx-rocm for AMD; TPU or
    Trainium plugins); the built-in host detector is ``trylast``.
    """


@hookspec(firstresult=True)
def inferx_engine_launch_spec(
    server: ServerConfig, platform: Platform, load: LoadProfile | None
) -> LaunchSpec | None:
    """Build the command that starts ``server.engine`` for this server configuration.

    When: once per server configuration, before fixes are applied and before
    launch; also by ``inferx plan`` (no launch).
    Params:
        server: the server configuration; ``server.port`` is already
        resolved (a free port was picked when the user gave none).
        platform: the detected or user-given platform.
        load: the load the server will be measured under (its concurrency
        levels, rates, stages), for engines that size their batch slots
        from it (llama.cpp's ``--parallel``); None where no run is planned
        (``inferx doctor``, ``inferx fixes``, the plugin kit).
    Returns: a :class:`~inferx_core.sdk.launch_spec.LaunchSpec` (None: no
    answer, the launch stops with an error naming the engine and plugin).
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine`` (an engine hook), so no "is this my engine?" check.
    Implement: engine plugins, in the plugin that registers the engine.
    """


@hookspec(firstresult=True)
def inferx_engine_readiness(server: ServerConfig, spec: LaunchSpec) -> list[ReadinessProbe] | None:
    """List the HTTP probes that together mean "ready to serve the benchmark".

    When: after launch; the core runs the probes in order, retrying each
    until it passes, bounded by ``server.readiness_timeout_s``, and aborts at
    once if the engine process exits.
    Params:
        server: the server configuration.
        spec: the launch spec after fixes (for host and port).
    Returns: a list of :class:`~inferx_core.sdk.probes.ReadinessProbe`, or None
    for the default probes.
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``. Without an answer the core uses GET /health then
    GET /v1/models.
    Implement: engine plugins.
    """


@hookspec(firstresult=True)
def inferx_engine_metrics(server: ServerConfig) -> EngineMetricsMap | None:
    """Map the engine's Prometheus metric names to what InferX records.

    When: before the load starts, to set up the /metrics scraper.
    Params:
        server: the server configuration.
    Returns: an :class:`~inferx_core.sdk.probes.EngineMetricsMap`, or None when
    the engine has no Prometheus metrics.
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``. Without an answer no engine metrics are scraped (and
    the result says so).
    Implement: engine plugins.
    """


@hookspec(firstresult=True)
def inferx_engine_argv_verdict(server: ServerConfig, spec: LaunchSpec) -> ArgvVerdict | None:
    """Ask the engine's own argument parser whether it accepts the launch's argv.

    When: ``inferx plan --check-args``, after fixes, for every server (and
    every process of a deployment), before any GPU hour is spent; never
    during a run.
    Params:
        server: the server configuration.
        spec: the launch spec after fixes; ``spec.argv`` is what would run.
    Returns: an :class:`~inferx_core.sdk.argv_check.ArgvVerdict` (accepted,
    refused with the engine's own message, or not checkable here and why),
    or None when the plugin cannot check argv at all.
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``. Without an answer the plan says the engine's argv
    could not be checked.
    Implement: engine plugins, by running the engine's parser where the
    engine is installed (its interpreter or binary), never a copy of it.
    """


@hookspec(firstresult=True)
def inferx_engine_tokenize_endpoints(server: ServerConfig | None) -> list[TokenizeEndpoint] | None:
    """Describe the engine's tokenizer endpoint: its route, request body and reply.

    When: before the prompts of a load are built, once per server (a run's
    launched server, ``inferx bench``'s external one): the core's server
    tokenizer counts (and, where it can, decodes) prompt tokens through the
    first endpoint that answers, so the token counts are the engine's own.
    Params:
        server: the server configuration; None when the engine is not known
        (``inferx bench`` without ``--engine``): the core then asks every
        plugin and tries all the endpoints, so an implementation must not
        need ``server`` to answer.
    Returns: a list of :class:`~inferx_core.sdk.tokenize_api.TokenizeEndpoint`,
    in the order to try them (e.g. the root route, then a ``/v1`` one), or
    None when the engine serves no tokenizer over HTTP.
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``. With ``server`` None, every plugin is asked and the
    answers are concatenated in call order, duplicates dropped. The first
    endpoint whose tokenize and detokenize both answer is used, else the
    first whose tokenize answers; without one the core counts with the
    workload's tokenizer file, else estimates (and says so).
    Implement: engine plugins whose server has a tokenize route (inferx-vllm,
    inferx-sglang, inferx-llamacpp); the core assumes no engine's format.
    """


@hookspec(firstresult=True)
def inferx_engine_server_timing(server: ServerConfig) -> ServerTiming | None:
    """Describe where the engine's replies carry its own per-request timing.

    When: once per server session, before its load is sent (a run's launched
    server, and ``inferx bench --engine``'s external one): the stream decoder
    keeps the reply fields named, reads the figures (queue, server TTFT,
    decode, speculative counts, cached tokens) into every per-request record,
    and adds ``request_body`` to every request. Not asked when the engine is
    not known.
    Params:
        server: the server configuration (its ``args`` say whether the flags
        the engine needs were given).
    Returns: a :class:`~inferx_core.sdk.server_timing_api.ServerTiming`, or
    None when the engine reports nothing per request (or cannot with these
    ``args``).
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``. Without an answer the records' server figures are
    null with the reason "the engine's plugin describes no per-request
    timing".
    Implement: engine plugins whose server reports per-request timing or
    speculative counts in its replies (inferx-vllm, inferx-llamacpp,
    inferx-sglang). The flags that turn the reporting on belong in the
    plugin's launch spec too, so launched servers have them by default.
    """


@hookspec
def inferx_telemetry_samplers(
    platform: Platform, gpu_ids: list[int], engine_pid: int | None
) -> list[Sampler] | None:
    """Offer samplers for telemetry while the load runs.

    When: once per load point, just before the warmup; samplers are started,
    read at their own interval on background threads and stopped after the
    measured window. Energy is integrated centrally over exactly that window.
    Params:
        platform: the detected platform.
        gpu_ids: the device indices the engine uses (only these should be
        sampled); for ``inferx bench`` against an external server, the local
        devices chosen with ``--gpus`` (default: all visible).
        engine_pid: the engine's process id when InferX launched it (for
        per-process CPU/RSS), else None.
    Returns: a list of objects following
    :class:`~inferx_core.sdk.sampler.Sampler`, or None when this
    plugin has nothing to sample here (e.g. no device of its vendor).
    Combine: list; every sampler offered runs.
    Implement: vendor plugins (NVML and host are built in).
    """


@hookspec
def inferx_container_fixes() -> list[Fix]:
    """Offer this plugin's catalogue of known container/driver problems and workarounds.

    When: before every launch (and by ``inferx plan``, ``inferx doctor`` and
    ``inferx fixes``). The core evaluates each fix's ``condition`` against
    the server configuration, platform and spec, skips ids disabled in the
    config, applies the rest in order (``Fix.order``, then id) and records
    every change in the result.
    Params: none. The catalogue is data; whether a fix applies is decided by
    its own ``condition``, so every fix can be listed and explained even
    where it does not apply.
    Returns: a list of :class:`~inferx_core.sdk.fixes.Fix`.
    Combine: list; catalogues are concatenated; fix ids must be unique
    across plugins.
    Implement: vendor plugins (NVIDIA fixes are built in; inferx-rocm) and
    engine plugins for engine-specific workarounds.
    """


@hookspec
def inferx_launchers() -> list[LauncherInfo]:
    """Register launchers by name (process, docker, slurm, kubernetes, ...).

    When: when the core resolves ``server.launcher`` and for ``inferx plugins``.
    Params: none.
    Returns: a list of :class:`~inferx_core.sdk.launcher.LauncherInfo`.
    Combine: list; names must be unique (a clash names both plugins).
    Implement: the core registers ``process`` and ``docker``; cluster
    plugins add their own.
    """


@hookspec
def inferx_executors() -> list[ExecutorInfo]:
    """Register executors by name: where a whole run executes (slurm, kubernetes, ...).

    When: when ``inferx run``/``inferx plan`` get ``--executor NAME`` (any name
    but ``local``, the in-process runner), and for ``inferx plugins``.
    Params: none.
    Returns: a list of :class:`~inferx_core.sdk.executor.ExecutorInfo`: ``name``,
    ``description`` and ``factory(options)``, which returns an object following
    :class:`~inferx_core.sdk.executor.Executor` (``describe``, ``submit``,
    ``poll``, ``cancel``, ``log_tail``). An executor runs each server
    configuration as a job that calls ``inferx run-job`` on its node, so the
    ordinary runner (launchers, fixes, telemetry, result files) does the work.
    Combine: list; names must be unique (a clash names both plugins); ``local``
    is reserved.
    Implement: the core registers ``slurm``; cluster plugins (Kubernetes,
    LSF, a cloud batch service) add their own.
    """


@hookspec(firstresult=True)
def inferx_engine_role_spec(
    server: ServerConfig, platform: Platform, role: RoleContext
) -> LaunchSpec | None:
    """Build the command of one process of a multi-node deployment (prefill, decode, router).

    When: once per process of a ``disaggregated`` or ``wide_ep`` deployment
    (docs/multinode.md), before fixes are applied; single servers use
    ``inferx_engine_launch_spec`` and never reach this hook.
    Params:
        server: the server configuration as this role runs it (the role's
        parallelism, engine_args, engine_env and port already merged in).
        platform: the detected or user-given platform.
        role: a :class:`~inferx_core.sdk.roles.RoleContext`: the
        role (``prefill``, ``decode``, ``both``, ``router``), replica and node
        rank, the node it runs on, the head node and rendezvous port of its
        replica, GPUs per node, and ``peers`` (role -> base URLs of the other
        roles' servers, which a router proxies to).
    Returns: a :class:`~inferx_core.sdk.launch_spec.LaunchSpec`, or None when
    the plugin cannot serve that role (the core then names the engine and the
    role in an error).
    Combine: firstresult; asked only of the plugin that registered
    ``server.engine``.
    Implement: engine plugins whose engine supports disaggregated serving or
    multi-node expert parallelism (SGLang, vLLM, TensorRT-LLM, Dynamo).
    """


@hookspec
def inferx_evaluators() -> list[EvaluatorInfo]:
    """Register evaluators by name: accuracy measured on the server beside its throughput.

    When: when ``inferx eval`` runs, when a run config has ``evals:`` (after
    the chosen load points, on the same server), and for ``inferx plugins``.
    Params: none.
    Returns: a list of :class:`~inferx_core.sdk.evaluator.EvaluatorInfo`:
    ``name``, ``description`` and ``factory(options)``, which returns an
    object following :class:`~inferx_core.sdk.evaluator.Evaluator`
    (``version()``, ``evaluate(target, task, workdir)`` answering
    :class:`~inferx_core.sdk.evaluator.AccuracyRecord` values).
    Combine: list; names must be unique (a clash names both plugins).
    Implement: evaluation plugins (inferx-lmeval registers ``lm-eval``).
    """
