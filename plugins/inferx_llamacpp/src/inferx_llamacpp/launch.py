"""How llama.cpp's llama-server is launched (``engine: llamacpp``); :mod:`inferx_llamacpp.hooks`
answers the InferX hooks from here.

The command follows llama-server's own ``--help``::

    llama-server --model M.gguf --host H --port P --alias NAME
        --parallel SLOTS --cont-batching --ctx-size N (--no-kv-unified | --kv-unified)
        --metrics --jinja --no-webui (--no-cache-prompt --cache-ram 0 | --cache-prompt)

- ``--parallel``: the slots that decode together (continuous batching).
  ``max_num_seqs`` when set, else the highest concurrency of the load, so no
  request waits for a slot the benchmark did not ask for.
- ``--ctx-size``: llama-server splits its context among the slots;
  ``max_model_len`` is per request, so the context is ``max_model_len x
  slots`` with a KV cache per slot. Without ``max_model_len`` the model's own
  context is shared by the slots (``--ctx-size 0 --kv-unified``).
- ``prefix_caching``: off (the default) passes ``--no-cache-prompt
  --cache-ram 0``, so no request reuses another's KV; on passes
  ``--cache-prompt`` and the hit counts come from
  ``llamacpp:prompt_tokens_cached_total``.
- ``model``: a ``.gguf`` file, or a local Hugging Face Llama directory that
  the plugin writes as GGUF once (:mod:`inferx_llamacpp.gguf_model`).
- the binary: ``executable`` when given, else ``$INFERX_LLAMA_SERVER``, the
  engine cache's build (``make llama-server``), else ``llama-server`` on PATH.
- ``parallelism``: llama.cpp has no tensor/data/expert parallelism of vLLM's
  kind; it spreads one model over the visible GPUs. ``tp: N`` passes
  ``--split-mode row`` (each layer's tensors split over N GPUs), ``pp: N``
  ``--split-mode layer`` (whole layers per GPU), over ``gpu_ids``; ``dp``,
  ``ep``, ``expert_parallel`` and ``dp_attention`` are refused (run one server
  per GPU as a deployment instead), and so is tp/pp on a machine without GPUs.
- ``engine_args`` become flags (``{n-gpu-layers: 99}`` -> ``--n-gpu-layers
  99``; true is a switch, false leaves it out); ``extra_argv`` is appended.
  Neither may set a flag the plugin sets, in any spelling (``-c 99``,
  ``--ctx_size``, ``-c99``: :mod:`inferx_llamacpp.flags`).
- ``speculative:`` becomes ``--spec-type`` and its flags, or is refused with
  the reason (:mod:`inferx_llamacpp.speculative`).
- the model file and the context are checked when the plan is made
  (:mod:`inferx_llamacpp.model_checks`): a missing, empty or non-GGUF file, or
  a context past llama-server's C int, is an error naming the field.
- prompt tokens are counted by llama-server's own ``/tokenize`` (``{content,
  add_special}`` -> ``{tokens}``; :data:`TOKENIZE`).
"""

from __future__ import annotations

from pathlib import Path

from inferx_core import (
    EngineInfo,
    EngineMetricsMap,
    LaunchSpec,
    LoadProfile,
    Platform,
    ReadinessProbe,
    ServerConfig,
    TokenizeEndpoint,
    UserFacingError,
    default_gpu_ids,
    port_free_wait,
    set_flag,
    tiny_completion_probe,
)
from inferx_llamacpp.engine_paths import BINARY_NAME, find_binary, model_cache_dir
from inferx_llamacpp.flags import check_user_flags, engine_arg_flag
from inferx_llamacpp.model_checks import check_gguf_file, context_size
from inferx_llamacpp.speculative import speculative_argv

ENGINE = "llamacpp"
#: llama-server's own default when asked for "auto" slots.
DEFAULT_SLOTS = 4


def engine_info() -> EngineInfo:
    return EngineInfo(
        name=ENGINE,
        description="llama.cpp's llama-server (OpenAI-compatible; CPU build from the engine "
        "cache, or any llama-server on PATH)",
        homepage="https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
        default_port=8080,
        # llama-server ignores stream_options.continuous_usage_stats: usage comes once,
        # on the finish chunk (completions) or a chunk of its own (chat).
        continuous_usage_stats=False,
        version_path="/props",
        version_field="build_info",
    )


def slots_for(server: ServerConfig, load: LoadProfile | None) -> int:
    """Slots: max_num_seqs, else the load's highest concurrency, else llama-server's 4."""
    if server.max_num_seqs is not None:
        return server.max_num_seqs
    if load is not None:
        wanted = [*(load.concurrency or []), load.max_concurrency]
        wanted += [getattr(stage, "concurrency", None) for stage in load.stages or []]
        levels = [int(c) for c in wanted if c]
        if levels:
            return max(levels)
    return DEFAULT_SLOTS


def model_file(server: ServerConfig) -> str:
    """The GGUF llama-server loads: the model itself (checked when this machine runs it), or
    its conversion from a HF directory."""
    from inferx_llamacpp.gguf_model import GgufConversionError, convert, gguf_path_for, is_hf_llama

    path = Path(server.model).expanduser()
    try:
        llama = path.is_dir() and is_hf_llama(path)
    except GgufConversionError as exc:  # its config.json is broken: the field, then where
        raise GgufConversionError(f"model {server.model!r}: {exc}") from None
    if llama:
        return str(convert(path, gguf_path_for(path, model_cache_dir())))
    if not server.image:  # an image's path is the container's: nothing here to check
        check_gguf_file(server.model, "model")
    return server.model


def engine_args_argv(server: ServerConfig) -> list[str]:
    check_user_flags(server)  # engine_args and extra_argv: no flag the plugin sets itself
    argv: list[str] = []
    for key, value in server.engine_args.items():
        set_flag(argv, engine_arg_flag(key), value)
    return argv


def spec_argv(server: ServerConfig) -> list[str]:
    """``speculative:`` as llama-server flags; its draft model checked like the model."""
    spec = server.speculative
    if spec is not None and spec.draft_model and not server.image:
        check_gguf_file(spec.draft_model, "speculative.draft_model")
    return speculative_argv(server)


def split_argv(server: ServerConfig, platform: Platform | None) -> list[str]:
    """llama.cpp's split of one model over GPUs, from ``parallelism``; refuses what it lacks."""
    par = server.parallelism
    refused = [
        name
        for name, set_ in (
            ("dp", par.dp > 1),
            ("ep", par.ep not in (None, 1)),
            ("expert_parallel", par.expert_parallel),
            ("dp_attention", par.dp_attention),
        )
        if set_
    ]
    if refused:
        raise UserFacingError(
            f"parallelism.{refused[0]}: llama-server has no data or expert parallelism; "
            "remove it, and run one llama-server per GPU (a deployment of several servers) "
            "for data-parallel serving"
        )
    if par.tp > 1 and par.pp > 1:
        raise UserFacingError(
            "parallelism.tp and parallelism.pp: llama-server splits a model one way "
            "(--split-mode row for tp, layer for pp); set one of them"
        )
    ways = max(par.tp, par.pp)
    if ways == 1:
        return []
    if platform is not None and not platform.accelerators:
        raise UserFacingError(
            f"parallelism.{'tp' if par.tp > 1 else 'pp'}: {ways} GPUs asked, but this machine "
            "has none; on CPU llama-server runs one model per process (engine_args: "
            "{threads: N} sets its threads)"
        )
    return ["--split-mode", "row" if par.tp > 1 else "layer"]


def build_argv(
    server: ServerConfig, load: LoadProfile | None = None, platform: Platform | None = None
) -> list[str]:
    binary = find_binary()
    executable = list(server.executable or [str(binary) if binary else BINARY_NAME])
    slots = slots_for(server, load)
    argv = [*executable, "--model", model_file(server)]
    argv += ["--host", server.host, "--port", str(server.port), "--alias", server.name_served]
    argv += ["--parallel", str(slots), "--cont-batching"]
    if server.max_model_len is not None:
        argv += ["--ctx-size", str(context_size(server.max_model_len, slots)), "--no-kv-unified"]
    else:
        argv += ["--ctx-size", "0", "--kv-unified"]
    argv += split_argv(server, platform)
    argv += ["--metrics", "--jinja", "--no-webui"]
    if server.prefix_caching:
        argv.append("--cache-prompt")
    else:
        argv += ["--no-cache-prompt", "--cache-ram", "0"]
    argv += spec_argv(server)
    argv += engine_args_argv(server)
    return [*argv, *server.extra_argv]


def _warnings(server: ServerConfig, argv: list[str]) -> tuple[str, ...]:
    notes = []
    if server.executable is None and find_binary() is None:
        notes.append(
            f"{BINARY_NAME} not found: run `make llama-server` (engine cache), put it on PATH "
            "or set INFERX_LLAMA_SERVER"
        )
    model = argv[argv.index("--model") + 1]
    if not model.endswith(".gguf"):
        notes.append(f"model {model!r}: llama-server loads a local .gguf file")
    if server.dtype or server.kv_cache_dtype or server.gpu_memory_utilization:
        notes.append(
            "dtype, kv_cache_dtype and gpu_memory_utilization are not llama-server settings; "
            "the GGUF file sets the weights' types (engine_args: {cache-type-k: ...} the KV's)"
        )
    return tuple(notes)


def launch_spec(server: ServerConfig, platform: Platform, load: LoadProfile | None) -> LaunchSpec:
    assert server.port is not None
    argv = build_argv(server, load, platform)
    return LaunchSpec(
        engine=ENGINE,
        argv=tuple(argv),
        env=dict(server.engine_env),
        image=server.image,
        host=server.host,
        port=server.port,
        preflight=(port_free_wait(server.port),),
        warnings=_warnings(server, argv),
        gpu_ids=default_gpu_ids(server, platform) if platform.accelerators else (),
        labels={"engine": ENGINE, "model": server.model},
    )


def readiness_probes() -> list[ReadinessProbe]:
    # /health answers 503 while the model loads, 200 once the slots are ready.
    return [
        ReadinessProbe(name="health", path="/health"),
        ReadinessProbe(
            name="model listed", path="/v1/models", expect_in_body="{served_model_name}"
        ),
        tiny_completion_probe("tiny completion"),
    ]


def metrics_map() -> EngineMetricsMap:
    # llama-server's --metrics families (tools/server/server-task.cpp): it has no KV-use
    # gauge and no preemption counter, and counts the prompt tokens it computed
    # (prompt_tokens_total) beside those it took from the cache.
    return EngineMetricsMap(
        requests_running="llamacpp:requests_processing",
        requests_waiting="llamacpp:requests_deferred",
        prefix_cache_hits="llamacpp:prompt_tokens_cached_total",
        prefix_cache_misses="llamacpp:prompt_tokens_total",
        # speculative decoding (tools/server/server-task.cpp): counters of verification
        # steps, draft tokens and accepted tokens. Its accepted-per-position counter is
        # left out: over a measured window it summed to 1.48 accepted per step where the
        # totals gave 1.59 (ngram, the demo model), which the bounds rightly call a
        # contradiction; the totals alone give the rate and the length.
        spec_decode_drafts="llamacpp:spec_decode_num_drafts_total",
        spec_decode_draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
        spec_decode_accepted_tokens="llamacpp:spec_decode_num_accepted_tokens_total",
        extra={
            "prompt_tokens_total": "llamacpp:prompt_tokens_total",
            "generation_tokens_total": "llamacpp:tokens_predicted_total",
            "decode_calls_total": "llamacpp:n_decode_total",
            "busy_slots_per_decode": "llamacpp:n_busy_slots_per_decode",
        },
    )


#: llama-server's tokenizer routes (tools/server: POST /tokenize {content, add_special,
#: with_pieces} -> {tokens: [id | {id, piece}]}; POST /detokenize {tokens} -> {content}).
#: It serves no model name and no context length in the reply.
TOKENIZE = TokenizeEndpoint(
    name="llama.cpp",
    path="/tokenize",
    text_field="content",
    add_special_field="add_special",
    tokens_field="tokens",
    token_id_field="id",  # with_pieces: each token is {id, piece}
    detokenize_path="/detokenize",
    detokenize_tokens_field="tokens",
    detokenize_text_fields=("content",),
)


def tokenize_endpoints() -> list[TokenizeEndpoint]:
    """llama-server's ``/tokenize`` and ``/detokenize``."""
    return [TOKENIZE]
