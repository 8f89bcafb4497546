"""Prompt sets: the prompts a point sends, each with its measured token count.

A :class:`PromptSet` is what a workload becomes at run time: the built prompts
and how they were made (the result's ``workload`` section). The workload as the
user writes it is the config model :class:`inferx_core.config.models.Workload`;
:class:`WorkloadSpec` is the part of it the builder reads.

Random prompts (``kind='random'`` or ``'lognormal'``; the text itself comes
from :mod:`inferx_core.load.prompts.prompt_text`) are built from seeded
random token ids so that prompts share no prefix beyond a token or two
(prefix caching cannot help; ``unique_prefix`` makes the very first tokens
differ too), then made to hit their target length exactly:
ids -> decode -> re-encode changes the length in most prompts, so each prompt
is trimmed or extended and re-checked until the tokenizer's count equals the
target (bounded iterations; a miss is recorded, never hidden). With a server
tokenizer the server's count is the truth.

Length conventions:

* ``api='completions'``: ``prompt_tokens`` is what the engine counts for the
  prompt string, including the special tokens its tokenizer adds (BOS).
* ``api='chat'``: ``prompt_tokens`` counts the message *content* only; the
  chat template adds a model-specific overhead that is not included here
  (read it from the server's ``usage.prompt_tokens``).

Dataset prompts (``kind='dataset'``) come from a JSONL file
(:mod:`inferx_core.load.prompts.dataset`).

With only an estimate counter exact lengths are impossible: prompts are word
text cut to the estimated target and the workload is flagged ``estimated``.

Reproducible: the same spec, seed and tokenizer give the same prompts; prompt
``i`` depends only on ``(seed, i)`` and its target length.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from inferx_core.config.bounds import DATASET_LINE_BYTES
from inferx_core.errors import UserFacingError
from inferx_core.load.prompts.dataset import (
    DatasetRecord,
    Message,
    bad_record,
    message_texts,
)
from inferx_core.load.prompts.dataset_formats import ColumnMap, load_dataset
from inferx_core.load.prompts.length_check import check_prompt_lengths
from inferx_core.load.prompts.lengths import (
    DEFAULT_LOGNORMAL_INPUT,
    DEFAULT_LOGNORMAL_OUTPUT,
    LengthSpec,
    sample_lengths,
)
from inferx_core.load.prompts.prompt_text import (
    STREAM_INPUT,
    STREAM_OUTPUT,
    content_values,
    exact_random_texts,
    fitted_word_texts,
    stream_rng,
)
from inferx_core.load.tokens.tokenizer import TokenCounter, TokenSource, is_tokenizer

WorkloadKind = Literal["random", "lognormal", "dataset"]
Api = Literal["completions", "chat"]
UniformSemantics = Literal["inferencex", "vllm", "sglang", "fixed"]

__all__ = [
    "Api",
    "NeedsDecodingError",
    "PromptSet",
    "PromptSpec",
    "UniformSemantics",
    "WorkloadKind",
    "WorkloadSpec",
    "build_prompt_set",
    "require_decoding",
]


class NeedsDecodingError(UserFacingError, ValueError):
    """Prompts must share exact tokens (a shared prefix, a trace's hash_ids), which needs a
    tokenizer that decodes token ids, and the counter cannot."""


def require_decoding(counter: TokenCounter, what: str) -> None:
    """Raise :class:`NeedsDecodingError` naming ``what`` and the fix unless ``counter``
    decodes token ids."""
    if is_tokenizer(counter):
        return
    why = getattr(counter, "decode_unavailable_reason", None)
    has = f"{counter.description} cannot decode token ids" + (f" ({why})" if why else "")
    raise NeedsDecodingError(
        f"{what} needs the model's tokenizer to make prompts share exact tokens, and {has}; "
        "fix: give --tokenizer path/to/tokenizer.json (workload.tokenizer), the model's"
    )


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """What to build.

    ``random``: input/output lengths drawn with ``semantics`` around ``isl`` /
    ``osl`` (see :mod:`inferx_core.load.prompts.lengths`). ``lognormal``: lengths from
    ``input_lognormal`` / ``output_lognormal``. ``dataset``: prompts from the
    JSONL file ``dataset_path``; records without ``output_len`` get an output
    length drawn like ``random``.
    """

    kind: WorkloadKind = "random"
    isl: int = 1024
    osl: int = 1024
    range_ratio: float = 0.8
    semantics: UniformSemantics = "inferencex"
    input_lognormal: LengthSpec = DEFAULT_LOGNORMAL_INPUT
    output_lognormal: LengthSpec = DEFAULT_LOGNORMAL_OUTPUT
    dataset_path: str | None = None
    api: Api = "completions"
    unique_prefix: bool = False
    max_fix_iterations: int = 16
    # Prefix-cache workloads: prompt i starts with group (i % prefix_groups)'s
    # shared_prefix-token prefix, then a unique part up to its input length.
    shared_prefix: int = 0
    prefix_groups: int = 1
    # dataset column mapping: (("prompt", col) | ("messages", col), ("output_len", col))
    dataset_columns: tuple[tuple[str, str], ...] = ()
    # a dataset line (or record prompt) over this is refused before it is tokenized
    dataset_max_line_bytes: int = DATASET_LINE_BYTES

    def __post_init__(self) -> None:
        if self.kind not in ("random", "lognormal", "dataset"):
            raise ValueError(
                f"unknown workload kind {self.kind!r}; use random, lognormal or dataset"
            )
        if self.api not in ("completions", "chat"):
            raise ValueError(f"unknown api {self.api!r}; use 'completions' or 'chat'")
        if self.semantics not in ("inferencex", "vllm", "sglang", "fixed"):
            raise ValueError(
                f"unknown semantics {self.semantics!r}; use inferencex, vllm, sglang or fixed "
                "(for log-normal lengths use kind='lognormal')"
            )
        if self.kind == "dataset" and not self.dataset_path:
            raise ValueError("kind='dataset' needs dataset_path")
        if self.input_lognormal.kind != "lognormal" or self.output_lognormal.kind != "lognormal":
            raise ValueError(
                "input_lognormal/output_lognormal must be LengthSpec(kind='lognormal', ...)"
            )
        if self.max_fix_iterations < 1:
            raise ValueError("max_fix_iterations must be >= 1")
        if self.shared_prefix < 0 or self.prefix_groups < 1:
            raise ValueError("shared_prefix must be >= 0 and prefix_groups >= 1")
        if self.shared_prefix and self.kind == "dataset":
            raise ValueError("shared_prefix applies to random/lognormal prompts, not a dataset")
        # validates isl/osl/range_ratio for the chosen semantics
        self.input_lengths()
        self.output_lengths()

    def input_lengths(self) -> LengthSpec:
        """The input-length sampler (unused by ``dataset``)."""
        if self.kind == "lognormal":
            return self.input_lognormal
        return LengthSpec(kind=self.semantics, length=self.isl, range_ratio=self.range_ratio)

    def output_lengths(self) -> LengthSpec:
        """The output-length (max_tokens) sampler."""
        if self.kind == "lognormal":
            return self.output_lognormal
        return LengthSpec(kind=self.semantics, length=self.osl, range_ratio=self.range_ratio)


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """One request's prompt: a string (completions) or messages (chat)."""

    prompt: str | list[Message]
    prompt_tokens: int
    target_prompt_tokens: int
    max_tokens: int
    estimated: bool = False  # prompt_tokens is an estimate, not a tokenizer count

    @property
    def hit_target(self) -> bool:
        return self.prompt_tokens == self.target_prompt_tokens

    @property
    def miss(self) -> int:
        """``prompt_tokens - target_prompt_tokens`` (0 when hit)."""
        return self.prompt_tokens - self.target_prompt_tokens


@dataclass(slots=True)
class PromptSet:
    """The built prompts of a point plus how they were made (for the result's
    ``workload`` section)."""

    prompts: list[PromptSpec]
    spec: WorkloadSpec
    seed: int
    token_source: TokenSource
    token_counter: str
    input_lengths: dict[str, Any]
    output_lengths: dict[str, Any]
    estimated: bool
    missed: int = 0
    max_abs_miss: int = 0
    mean_abs_miss: float = 0.0  # over the prompts that missed
    build_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self) -> Iterator[PromptSpec]:
        return iter(self.prompts)

    def __getitem__(self, i: int) -> PromptSpec:
        return self.prompts[i]

    @property
    def semantics(self) -> str:
        return str(self.input_lengths.get("semantics"))

    def summary(self) -> dict[str, Any]:
        """JSON-ready metadata (no prompt texts)."""
        spec = asdict(self.spec)
        spec["dataset_columns"] = dict(self.spec.dataset_columns)  # JSON has no tuples
        ptoks = [p.prompt_tokens for p in self.prompts]
        otoks = [p.max_tokens for p in self.prompts]
        return {
            "spec": spec,
            "num_prompts": len(self.prompts),
            "seed": self.seed,
            "token_source": self.token_source,
            "token_counter": self.token_counter,
            "estimated": self.estimated,
            "input_lengths": self.input_lengths,
            "output_lengths": self.output_lengths,
            "total_prompt_tokens": int(sum(ptoks)),
            "mean_prompt_tokens": float(np.mean(ptoks)) if ptoks else 0.0,
            "mean_max_tokens": float(np.mean(otoks)) if otoks else 0.0,
            "missed_target": self.missed,
            "max_abs_miss": self.max_abs_miss,
            "mean_abs_miss": self.mean_abs_miss,
            "build_seconds": self.build_seconds,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------
# building


def _random_prompts(
    spec: WorkloadSpec,
    counter: TokenCounter,
    n: int,
    seed: int,
    out_lens: list[int],
    notes: list[str],
) -> tuple[list[PromptSpec], dict[str, Any]]:
    """Random (or log-normal) prompts fitted to lengths drawn from the spec."""
    chat = spec.api == "chat"
    estimated = counter.source == "estimate"
    in_spec = spec.input_lengths()
    targets = sample_lengths(in_spec, n, stream_rng(seed, STREAM_INPUT))
    if is_tokenizer(counter):
        shared = group_prefix_ids(spec, counter, n, seed, chat=chat) if spec.shared_prefix else None
        if shared is not None:
            targets = [max(t, len(shared[i]) + 1) for i, t in enumerate(targets)]
            notes.append(
                f"shared prefixes: {spec.prefix_groups} group(s) of {spec.shared_prefix} tokens; "
                f"prompt i uses group i % {spec.prefix_groups}"
            )
        texts, vals = exact_random_texts(
            counter,
            targets,
            seed,
            chat=chat,
            unique_prefix=spec.unique_prefix and shared is None,
            max_rounds=spec.max_fix_iterations,
            shared_prefixes=shared,
        )
    else:
        texts, vals = fitted_word_texts(
            counter, targets, seed, chat=chat, unique_prefix=spec.unique_prefix
        )
        notes.append(_count_only_note(counter, estimated))
    prompts = [
        PromptSpec(
            prompt=[{"role": "user", "content": t}] if chat else t,
            prompt_tokens=v,
            target_prompt_tokens=tgt,
            max_tokens=o,
            estimated=estimated,
        )
        for t, v, tgt, o in zip(texts, vals, targets, out_lens, strict=True)
    ]
    return prompts, in_spec.describe()


def group_prefix_ids(
    spec: WorkloadSpec, tok: Any, n: int, seed: int, *, chat: bool
) -> list[list[int]]:
    """Each prompt's shared prefix: ``prefix_groups`` exact-length random texts, as the
    token ids they encode to, assigned round robin."""
    groups = spec.prefix_groups
    texts, _ = exact_random_texts(
        tok,
        [spec.shared_prefix + (0 if chat else int(tok.special_overhead))] * groups,
        seed + 104729,  # a stream of its own: the unique parts keep theirs
        chat=chat,
        unique_prefix=False,
        max_rounds=spec.max_fix_iterations,
    )
    bodies = [body for _, body in tok.measure_batch(texts)]
    return [bodies[i % groups] for i in range(n)]


def _count_only_note(counter: TokenCounter, estimated: bool) -> str:
    """Why the prompts are word text rather than exact-length token text."""
    if estimated:
        return (
            "estimate counter: prompts are word text sized by an estimate; "
            "real token counts are unknown"
        )
    why = getattr(counter, "decode_unavailable_reason", None)
    return (
        "counter cannot decode token ids"
        + (f" ({why})" if why else "")
        + ": prompts are random word text cut to length by the counter"
    )


def _context_note(counter: TokenCounter, prompts: Sequence[PromptSpec]) -> str | None:
    """A note when prompts plus max_tokens overflow the server's context length."""
    max_len = getattr(counter, "max_model_len", None)
    if not (isinstance(max_len, int) and max_len > 0):
        return None
    over = sum(1 for p in prompts if p.prompt_tokens + p.max_tokens > max_len)
    if not over:
        return None
    return f"{over} prompts exceed the server's max_model_len={max_len} with max_tokens"


def _check_build_args(n: int, seed: int) -> None:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def build_prompt_set(spec: WorkloadSpec, counter: TokenCounter, n: int, seed: int) -> PromptSet:
    """Build ``n`` prompts for ``spec``, measuring every length with ``counter``."""
    _check_build_args(n, seed)
    if spec.shared_prefix and spec.kind != "dataset":
        require_decoding(counter, f"shared_prefix {spec.shared_prefix} (--shared-prefix)")
    t0 = time.perf_counter()
    chat = spec.api == "chat"
    estimated = counter.source == "estimate"
    notes: list[str] = []
    out_spec = spec.output_lengths()
    out_lens = sample_lengths(out_spec, n, stream_rng(seed, STREAM_OUTPUT))
    if spec.kind == "dataset":
        prompts, in_desc = _dataset_prompts(spec, counter, n, out_lens, notes)
    else:
        prompts, in_desc = _random_prompts(spec, counter, n, seed, out_lens, notes)
    if chat:
        notes.append(
            "chat: prompt_tokens counts message content only; the chat template's "
            "overhead is not included (measure it from usage.prompt_tokens)"
        )
    if (context_note := _context_note(counter, prompts)) is not None:
        notes.append(context_note)
    if spec.kind != "dataset":  # a dataset's prompts are as the file holds them: no target
        check_prompt_lengths(prompts, counter.description)
    misses = [abs(p.miss) for p in prompts if p.miss]
    return PromptSet(
        prompts=prompts,
        spec=spec,
        seed=seed,
        token_source=counter.source,
        token_counter=counter.description,
        input_lengths=in_desc,
        output_lengths=out_spec.describe(),
        estimated=estimated,
        missed=len(misses),
        max_abs_miss=max(misses, default=0),
        mean_abs_miss=float(np.mean(misses)) if misses else 0.0,
        build_seconds=time.perf_counter() - t0,
        notes=notes,
    )


# --------------------------------------------------------------------------
# dataset prompts


def _require_prompt_strings(path: Path, records: Sequence[DatasetRecord]) -> None:
    for r in records:
        if not isinstance(r.prompt, str):
            raise bad_record(
                path,
                r.line,
                "a 'messages' record cannot be sent to the completions API",
                "use api='chat', or give a 'prompt' string instead",
            )


def _chat_prompts(
    counter: TokenCounter, chosen: Sequence[DatasetRecord]
) -> tuple[list[str | list[Message]], list[int]]:
    """Each record as chat messages, with its content tokens summed over the text pieces."""
    msgs = [
        r.prompt if isinstance(r.prompt, list) else [{"role": "user", "content": r.prompt}]
        for r in chosen
    ]
    pieces = [message_texts(m) for m in msgs]
    flat = [s for ps in pieces for s in ps]
    vals = content_values(counter, flat, True)
    counts: list[int] = []
    pos = 0
    for ps in pieces:
        counts.append(int(sum(vals[pos : pos + len(ps)])))
        pos += len(ps)
    return list(msgs), counts


def _dataset_prompts(
    spec: WorkloadSpec,
    counter: TokenCounter,
    n: int,
    out_lens: list[int],
    notes: list[str],
) -> tuple[list[PromptSpec], dict[str, Any]]:
    assert spec.dataset_path is not None
    chat = spec.api == "chat"
    path = Path(spec.dataset_path)
    columns = ColumnMap(**dict(spec.dataset_columns)) if spec.dataset_columns else None
    loaded = load_dataset(path, columns, spec.dataset_max_line_bytes)
    records = loaded.records
    if loaded.reason:
        notes.append(f"dataset: skipped {loaded.reason}")
    if loaded.reference_outputs is not None:
        # ShareGPT: the reference reply's token count is the output length (vLLM's rule)
        lengths = counter.count_batch([r or "" for r in loaded.reference_outputs])
        records = [replace(r, output_len=max(1, n)) for r, n in zip(records, lengths, strict=True)]
    if not chat:
        _require_prompt_strings(path, records)
    chosen = [records[i % len(records)] for i in range(n)]
    if n > len(records):
        notes.append(
            f"dataset has {len(records)} records for {n} prompts: records repeat "
            "(repeated prompts can hit the prefix cache)"
        )
    if chat:
        prompt_objs, counts = _chat_prompts(counter, chosen)
    else:
        texts = [r.prompt for r in chosen]
        counts = counter.count_batch(texts)  # type: ignore[arg-type]  # completions: str prompts
        prompt_objs = list(texts)
    prompts = [
        PromptSpec(
            prompt=po,
            prompt_tokens=c,
            target_prompt_tokens=c,
            max_tokens=r.output_len if r.output_len is not None else o,
            estimated=counter.source == "estimate",
        )
        for po, c, r, o in zip(prompt_objs, counts, chosen, out_lens, strict=True)
    ]
    desc = {
        "semantics": "dataset",
        "path": str(path),
        "records": len(records),
        "output_len_from_file": sum(1 for r in chosen if r.output_len is not None),
    }
    return prompts, desc
