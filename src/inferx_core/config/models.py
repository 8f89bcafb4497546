"""Run and sweep configuration (pydantic v2): strict, defaulted, loadable from YAML/JSON.

A minimal run config is two lines::

    engine: vllm
    model: meta-llama/Llama-3.1-8B-Instruct

Unknown keys are errors; :func:`inferx_core.config.loader.load_config`
reports the file, the field path and what is allowed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, field_validator, model_validator

from inferx_core.config.base import StrictModel
from inferx_core.config.bounds import (
    DATASET_LINE_BYTES,
    MAX_PROMPTS,
    MAX_SEED,
    MAX_TOKENS,
    MAX_TURNS,
)
from inferx_core.config.checks import check_base_url, check_fits_context, check_percentiles
from inferx_core.config.deployment import Deployment, check_gpu_split
from inferx_core.config.evals import EvalsConfig
from inferx_core.config.load_profile import LoadProfile
from inferx_core.config.parallelism import ArgValue, Parallelism
from inferx_core.config.reasoning import ReasoningConfig
from inferx_core.config.search import SearchConfig
from inferx_core.config.secrets import (
    env_secret_values,
    header_secret_values,
    remember_public_names,
    remember_secrets,
)
from inferx_core.config.sessions import (
    ThinkTimeConfig,
    check_multi_turn_workload,
)
from inferx_core.config.slo import PointSlo, SloTarget
from inferx_core.config.speculative import SpeculativeConfig
from inferx_core.config.trace_checks import (
    check_trace_load,
    check_trace_workload,
    parse_trace_window,
)
from inferx_core.config.validity import ValidityLimits

RangeSemantics = Literal["inferencex", "vllm", "sglang", "fixed"]
ApiKind = Literal["completions", "chat"]
TraceFormat = Literal["mooncake", "azure", "inferx"]


class ServerConfig(StrictModel):
    """One engine server: what to launch and how. Launched once for all its load points."""

    engine: str = Field(description="Engine name registered by a plugin (see `inferx plugins`)")
    model: str = Field(min_length=1, description="Model id or local path")
    served_model_name: str | None = Field(
        default=None, description="Name the server exposes; defaults to the model"
    )
    parallelism: Parallelism = Field(default_factory=Parallelism)
    max_model_len: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    kv_cache_dtype: str | None = None
    prefix_caching: bool = Field(
        default=False, description="Off by default: random prompts must not hit a cache"
    )
    dtype: str | None = None
    speculative: SpeculativeConfig | None = Field(
        default=None, description="Speculative decoding (docs/speculative.md); None: off"
    )
    engine_args: dict[str, ArgValue] = Field(
        default_factory=dict,
        description="Extra engine flags: {'enforce-eager': true, 'max-num-batched-tokens': 8192}",
    )
    extra_argv: list[str] = Field(default_factory=list, description="Raw extra arguments")
    engine_env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment of the engine. Values are secrets (never written) unless the "
        "name is on the allow-list (CUDA_*, NCCL_*, ...) or in public_env",
    )
    public_env: list[str] = Field(
        default_factory=list,
        description="engine_env names whose values hold no secret and may be written "
        "(names that say TOKEN, KEY, SECRET, PASSWORD, ... never are)",
    )
    engine_cpus: list[int] | None = Field(
        default=None,
        description="CPUs the engine may run on (taskset, docker --cpuset-cpus, srun "
        "--cpu-bind); None: all but the client's on a small host (`inferx docs configuration`)",
    )
    executable: list[str] | None = Field(
        default=None,
        description="argv prefix that starts the engine, e.g. ['/opt/venv/bin/python', '-m', "
        "'vllm.entrypoints.openai.api_server']; default: the plugin's",
    )
    image: str | None = Field(default=None, description="Container image (docker launcher)")
    launcher: str = Field(default="process", description="Launcher name (see `inferx plugins`)")
    host: str = "127.0.0.1"
    port: int | None = Field(default=None, ge=1, le=65535, description="None: pick a free port")
    gpu_ids: list[NonNegativeInt] | None = Field(
        default=None, description="None: the first tp*pp*dp GPUs"
    )
    disable_fixes: list[str] = Field(default_factory=list, description="Fix ids not to apply")
    readiness_timeout_s: float = Field(default=1800.0, gt=0)
    api_key: str | None = Field(
        default_factory=lambda: os.environ.get("INFERX_API_KEY") or None,
        description="Sent as Authorization: Bearer to the engine (readiness, requests); give "
        "the engine the same key (vLLM: engine_env VLLM_API_KEY). Default: $INFERX_API_KEY. "
        "Never written (redacted)",
    )
    stop_grace_s: float = Field(default=30.0, ge=0)
    plugin_options: dict[str, Any] = Field(
        default_factory=dict, description="Engine-plugin specific settings"
    )
    telemetry_intervals: dict[str, float] = Field(
        default_factory=dict,
        description="Sampler name -> interval s (default nvml 0.5, host 1.0, engine_metrics "
        "1.0, router_metrics 1.0)",
    )

    @model_validator(mode="after")
    def _remember_secrets(self) -> ServerConfig:
        remember_public_names(self.public_env)
        remember_secrets([*env_secret_values(self.engine_env), self.api_key or ""])
        return self  # every writer masks them

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    @property
    def name_served(self) -> str:
        return self.served_model_name or self.model

    @property
    def num_gpus(self) -> int:
        return self.parallelism.gpus


class LognormalMix(StrictModel):
    """Production-like lengths: log-normal, clipped. Defaults: inputs mostly 128-512."""

    input_median: float = Field(default=256, gt=0)
    input_sigma: float = Field(default=0.7, ge=0)
    input_min: int = Field(default=16, ge=1)
    input_max: int = Field(default=4096, ge=1)
    output_median: float = Field(default=128, gt=0)
    output_sigma: float = Field(default=0.5, ge=0)
    output_min: int = Field(default=8, ge=1)
    output_max: int = Field(default=1024, ge=1)

    @model_validator(mode="after")
    def _bounds_ordered(self) -> LognormalMix:
        for side in ("input", "output"):
            low, high = getattr(self, f"{side}_min"), getattr(self, f"{side}_max")
            if low > high:
                raise ValueError(f"{side}_min ({low}) must be <= {side}_max ({high})")
        return self


class Workload(StrictModel):
    """What each request asks for, as the user configures it. At run time it is built
    into a point's prompts, a ``PromptSet`` (``load/prompts/prompt_set.py``)."""

    api: ApiKind = "completions"
    kind: Literal["random", "lognormal", "dataset", "trace", "multi-turn"] = "random"
    isl: int = Field(
        default=1024, ge=1, le=MAX_TOKENS, description="Input sequence length (tokens)"
    )
    osl: int = Field(
        default=1024, ge=1, le=MAX_TOKENS, description="Output sequence length (tokens)"
    )
    range_ratio: float = Field(default=0.8, ge=0, le=1)
    range_semantics: RangeSemantics = Field(
        default="inferencex",
        description="inferencex: uniform [floor(r*L), L]; vllm: [L(1-r), L(1+r)]; "
        "sglang: [L*r, L]; fixed: exactly L",
    )
    lognormal: LognormalMix = Field(default_factory=LognormalMix)
    dataset: Path | None = Field(
        default=None,
        description="Prompts (kind=dataset): InferX JSONL, ShareGPT JSON, a JSON array, "
        "Parquet or an HF save_to_disk folder (`inferx docs workloads`)",
    )
    dataset_columns: dict[Literal["prompt", "messages", "output_len"], str] = Field(
        default_factory=dict,
        description="Column names of a Parquet/HF/JSON dataset, e.g. {prompt: question}",
    )
    dataset_max_line_bytes: int = Field(
        default=DATASET_LINE_BYTES,
        ge=1024,
        le=2**31,
        description="A dataset line (or one record's prompt) over this many bytes is refused, "
        "naming it, before it is parsed or tokenized (default 16 MiB)",
    )
    reasoning: ReasoningConfig | None = Field(default=None, description="docs/speculative.md")
    ignore_eos: bool = True
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    shared_prefix: int = Field(
        default=0,
        ge=0,
        le=MAX_TOKENS,
        description="Tokens every prompt of a group starts with (prefix-cache workloads; 0: none)",
    )
    prefix_groups: int = Field(
        default=1,
        ge=1,
        le=MAX_PROMPTS,
        description="Distinct shared prefixes; prompt i uses group i % K",
    )
    tokenizer: Path | None = Field(
        default=None, description="Local tokenizer.json used when the server has no /tokenize"
    )
    trace: Path | None = Field(
        default=None,
        description="Timestamped trace to replay (kind=trace): requests are sent at its times "
        "(`inferx docs workloads`)",
    )
    trace_format: TraceFormat | None = Field(
        default=None, description="mooncake (JSONL, ms, hash_ids), azure (CSV) or inferx"
    )
    trace_speedup: float = Field(
        default=1.0, gt=0, description="Replay this many times faster than recorded"
    )
    trace_window: tuple[float, float | None] | None = Field(
        default=None,
        description="[START, END) seconds of trace time to replay, '60:120' or [60, 120] "
        "(END null: to the end)",
    )
    max_model_len: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Context length: dataset and trace prompts whose tokens + max_tokens exceed "
        "it are skipped and counted; None: the server's /v1/models max_model_len when reported",
    )

    turns: int = Field(default=2, ge=1, le=MAX_TURNS, description="multi-turn: turns per session")
    think_time_s: NonNegativeFloat | ThinkTimeConfig = Field(
        default=0.0,
        description="multi-turn: seconds between a reply and the next turn; a number, or "
        "{kind: exponential|lognormal|constant, mean | median and sigma}",
    )
    turn_isl: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="multi-turn: tokens of each new user message (None: isl)",
    )
    turn_osl: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="multi-turn: output tokens of each turn (None: osl)",
    )

    @field_validator("trace_window", mode="before")
    @classmethod
    def _window(cls, value: object) -> object:
        return parse_trace_window(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        check_trace_workload(self)
        check_multi_turn_workload(self)
        if self.dataset is not None and self.kind != "dataset":
            if "kind" in self.model_fields_set:
                raise ValueError(
                    f"dataset: is read only with kind 'dataset' (kind is {self.kind!r}); "
                    "set kind: dataset, or remove dataset:"
                )
            self.kind = "dataset"  # a dataset given alone implies kind 'dataset'
        if self.kind == "dataset" and self.dataset is None:
            raise ValueError("kind 'dataset' needs 'dataset: path/to/prompts.jsonl'")
        if self.range_semantics == "vllm" and self.range_ratio >= 1:
            raise ValueError(
                "range_semantics 'vllm' draws from [L(1-r), L(1+r)] and needs range_ratio < 1"
            )
        return self


#: The public API's name for the one SLO type (``inferx_core.api.SLO``).
SLO = SloTarget


class HardwareCost(StrictModel):
    """Price and power per GPU; None falls back to the built-in table for ``gpu_type``."""

    gpu_type: str | None = Field(default=None, description="H100, H200, B200, MI300X, ...")
    tier: Literal["owner", "neocloud", "rental"] = "owner"
    usd_per_gpu_hour: float | None = Field(default=None, gt=0)
    kw_per_gpu: float | None = Field(default=None, gt=0)


def _validity_field() -> Any:
    return Field(
        default_factory=ValidityLimits,
        description="Limits of the validity checks (`inferx docs metrics`)",
    )


def _slo_field() -> Any:
    return Field(
        default=None,
        description="Per-request limits a point's goodput counts (ttft_ms, tpot_ms, itl_ms, "
        "e2el_ms, intvty); None: no goodput",
    )


def _client_cpus_field(default_meaning: str) -> Any:
    return Field(default=None, description=f"CPUs the load generator may run on; {default_meaning}")


class RunConfig(ServerConfig):
    """One server plus the workload and load points to run against it."""

    name: str | None = Field(default=None, description="Label used in result ids")
    workload: Workload = Field(default_factory=Workload)
    load: LoadProfile = Field(default_factory=LoadProfile)
    slo: PointSlo = _slo_field()
    validity: ValidityLimits = _validity_field()
    client_cpus: list[int] | None = _client_cpus_field(
        "None: the last CPU on a small host while InferX runs the engine there, else any"
    )
    cpu_isolation: bool = Field(
        default=True, description="Keep the client and a launched engine on separate CPUs"
    )
    cost: HardwareCost = Field(default_factory=HardwareCost)
    search: SearchConfig | None = Field(default=None, description="Capacity search under an SLO")
    evals: EvalsConfig | None = Field(default=None, description="Accuracy evals (issue 17)")
    deployment: Deployment | None = Field(
        default=None, description="Several processes as one endpoint (docs/multinode.md)"
    )
    output_dir: Path = Path("results")

    @model_validator(mode="after")
    def _fits_context(self) -> RunConfig:
        check_fits_context(self.workload, self.max_model_len, "max_model_len of this config")
        check_trace_load(self.workload, self.load)
        if self.deployment is not None:
            check_gpu_split(self.deployment, self.parallelism)
        return self

    def server(self) -> ServerConfig:
        fields = set(ServerConfig.model_fields)
        return ServerConfig(**{k: v for k, v in self if k in fields})


class BenchConfig(StrictModel):
    """A benchmark against a server that is already running (``inferx bench``)."""

    base_url: str = Field(pattern=r"^https?://", description="e.g. http://127.0.0.1:8000")
    model: str | None = Field(default=None, description="Served model name; None: ask /v1/models")
    name: str | None = Field(default=None, description="Label used in result ids")
    workload: Workload = Field(default_factory=Workload)
    load: LoadProfile = Field(default_factory=LoadProfile)
    slo: PointSlo = _slo_field()
    search: SearchConfig | None = Field(default=None, description="Capacity search under an SLO")
    validity: ValidityLimits = _validity_field()
    client_cpus: list[int] | None = _client_cpus_field("None: any CPU")
    cost: HardwareCost = Field(default_factory=HardwareCost)
    num_gpus: int | None = Field(
        default=None, ge=1, description="GPUs behind the server, for per-GPU throughput"
    )
    # nan and inf reach check_percentiles, whose message says the range
    percentiles: list[Annotated[float, Field(allow_inf_nan=True)]] = Field(
        default_factory=lambda: [50.0, 90.0, 99.0, 99.9]
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra HTTP headers (e.g. Authorization); redacted"
    )
    engine: str | None = Field(
        default=None, description="Engine behind the server, to scrape its /metrics by name"
    )
    speculative: SpeculativeConfig | None = Field(
        default=None,
        description="The server's speculative decoding (docs/speculative.md), as it was "
        "started: each point checks the measured acceptance (engine's /metrics; give "
        "engine:) against golden_acceptance_length, and exports say spec_decoding",
    )
    gpus: list[NonNegativeInt] | None = Field(
        default=None,
        description="Local GPUs to sample (the client often runs on the node); None: all visible",
    )
    api_key: str | None = Field(
        default_factory=lambda: os.environ.get("INFERX_API_KEY") or None,
        description="Sent as Authorization: Bearer (default: $INFERX_API_KEY); redacted",
    )
    telemetry: bool = Field(default=True, description="Sample power, host and engine metrics")
    telemetry_intervals: dict[str, float] = Field(
        default_factory=dict, description="Sampler name -> interval s, e.g. {nvml: 0.1}"
    )
    output_dir: Path | None = Path("results")

    @field_validator("base_url", mode="before")
    @classmethod
    def _base_url(cls, value: object) -> object:
        return check_base_url(value) if isinstance(value, str) else value

    @field_validator("percentiles")
    @classmethod
    def _percentiles(cls, value: list[float]) -> list[float]:
        return check_percentiles(value)

    @model_validator(mode="after")
    def _trace_load(self) -> BenchConfig:
        check_trace_load(self.workload, self.load)
        return self

    @model_validator(mode="after")
    def _remember_secrets(self) -> BenchConfig:
        remember_secrets([*header_secret_values(self.headers), self.api_key or ""])
        return self  # every writer masks them

    def request_headers(self) -> dict[str, str]:
        """``headers`` plus the API key's Authorization (a header given wins)."""
        auth = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        given = {k.lower() for k in self.headers}
        return {**{k: v for k, v in auth.items() if k.lower() not in given}, **self.headers}


def is_sweep(data: dict[str, Any]) -> bool:
    return isinstance(data, dict) and "base" in data


def is_bench(data: dict[str, Any]) -> bool:
    return isinstance(data, dict) and "base_url" in data and "engine" not in data
