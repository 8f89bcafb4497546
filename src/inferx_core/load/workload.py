"""Workloads: the prompts a run sends, each with its measured token count.

Random prompts (``kind='random'`` or ``'lognormal'``) are built from seeded
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

With only an estimate counter exact lengths are impossible: prompts are word
text cut to the estimated target and the workload is flagged ``estimated``.

Reproducible: the same spec, seed and tokenizer give the same prompts; prompt
``i`` depends only on ``(seed, i)`` and its target length.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from inferx_core.errors import UserFacingError
from inferx_core.load.lengths import (
    DEFAULT_LOGNORMAL_INPUT,
    DEFAULT_LOGNORMAL_OUTPUT,
    LengthSpec,
    sample_lengths,
)
from inferx_core.load.tokenizer import TokenCounter, TokenSource, is_tokenizer

WorkloadKind = Literal["random", "lognormal", "dataset"]
Api = Literal["completions", "chat"]
UniformSemantics = Literal["inferencex", "vllm", "sglang", "fixed"]

Message = dict[str, Any]

# independent random streams derived from the seed
_STREAM_INPUT = 0
_STREAM_OUTPUT = 1
_STREAM_PROMPT = 2
_STREAM_TEXT = 3


class DatasetError(UserFacingError, ValueError):
    """A dataset file is unusable; the message names file, line and fix."""


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """What to build.

    ``random``: input/output lengths drawn with ``semantics`` around ``isl`` /
    ``osl`` (see :mod:`inferx_core.load.lengths`). ``lognormal``: lengths from
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
class Workload:
    """Prompts plus how they were made (for the run result)."""

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
# dataset


@dataclass(frozen=True, slots=True)
class DatasetRecord:
    """One JSONL line: a prompt string or chat messages, optional output length."""

    prompt: str | list[Message]
    output_len: int | None
    line: int


_FORMAT_HELP = (
    'each line must be a JSON object {"prompt": "...", "output_len": 128} '
    'or {"messages": [{"role": "user", "content": "..."}]}'
)


def load_jsonl_dataset(path: str | Path) -> list[DatasetRecord]:
    """Read a JSONL dataset; a bad line raises :class:`DatasetError` naming it."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"{p}: cannot read dataset: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"{p}: not UTF-8 text ({exc}); fix: save the file as UTF-8 JSONL"
        ) from exc
    records: list[DatasetRecord] = []
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        records.append(_parse_record(p, lineno, line))
    if not records:
        raise DatasetError(f"{p}: no records; fix: {_FORMAT_HELP}")
    return records


def _bad(p: Path, lineno: int, problem: str, fix: str) -> DatasetError:
    return DatasetError(f"{p}:{lineno}: {problem}; fix: {fix}")


def _parse_record(p: Path, lineno: int, line: str) -> DatasetRecord:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise _bad(
            p, lineno, f"invalid JSON ({exc.msg} at column {exc.colno})", _FORMAT_HELP
        ) from exc
    if not isinstance(obj, dict):
        raise _bad(p, lineno, f"expected a JSON object, got {type(obj).__name__}", _FORMAT_HELP)
    has_prompt, has_messages = "prompt" in obj, "messages" in obj
    if has_prompt and has_messages:
        raise _bad(p, lineno, "has both 'prompt' and 'messages'", "keep exactly one of them")
    if not has_prompt and not has_messages:
        raise _bad(p, lineno, "has neither 'prompt' nor 'messages'", _FORMAT_HELP)
    prompt: str | list[Message]
    if has_prompt:
        if not isinstance(obj["prompt"], str) or not obj["prompt"]:
            raise _bad(
                p, lineno, "'prompt' must be a non-empty string", 'write "prompt": "your text"'
            )
        prompt = obj["prompt"]
    else:
        prompt = _check_messages(p, lineno, obj["messages"])
    out_len = obj.get("output_len")
    if out_len is not None and (
        isinstance(out_len, bool) or not isinstance(out_len, int) or out_len < 1
    ):
        raise _bad(
            p,
            lineno,
            f"'output_len' must be an integer >= 1, got {out_len!r}",
            'write e.g. "output_len": 128 or omit it',
        )
    return DatasetRecord(prompt=prompt, output_len=out_len, line=lineno)


def _check_messages(p: Path, lineno: int, msgs: Any) -> list[Message]:
    fix = 'write "messages": [{"role": "user", "content": "..."}]'
    if not isinstance(msgs, list) or not msgs:
        raise _bad(p, lineno, "'messages' must be a non-empty list", fix)
    for j, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise _bad(p, lineno, f"messages[{j}] is not an object", fix)
        if not isinstance(m.get("role"), str) or not m["role"]:
            raise _bad(p, lineno, f"messages[{j}] has no 'role' string", fix)
        content = m.get("content")
        if not isinstance(content, (str, list)):
            raise _bad(
                p, lineno, f"messages[{j}] 'content' must be a string or a list of parts", fix
            )
    return msgs


def _message_texts(msgs: Sequence[Message]) -> list[str]:
    """The text pieces of a message list (string contents and text parts)."""
    out: list[str] = []
    for m in msgs:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            for part in c:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
                elif isinstance(part, str):
                    out.append(part)
    return out


# --------------------------------------------------------------------------
# building


def _rng(seed: int, *stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, *stream])


def _content_values(counter: TokenCounter, texts: Sequence[str], chat: bool) -> list[int]:
    """Token counts used as the length: with specials (completions) or content only (chat)."""
    if chat and callable(getattr(type(counter), "encode_batch", None)):
        return [len(x) for x in counter.encode_batch(list(texts))]  # type: ignore[attr-defined]
    return counter.count_batch(list(texts))


def _exact_random_texts(
    tok: Any, targets: Sequence[int], seed: int, spec: WorkloadSpec, chat: bool
) -> tuple[list[str], list[int]]:
    """Random-token texts whose measured length equals each target when possible."""
    n = len(targets)
    cand = tok.candidate_ids()
    refill = tok.refill_ids()
    ncand, nrefill = len(cand), len(refill)
    special: frozenset[int] = tok.special_ids
    overhead = 0 if chat else int(tok.special_overhead)
    rngs = [_rng(seed, _STREAM_PROMPT, i) for i in range(n)]

    def fresh(i: int, k: int) -> list[int]:
        if k <= 0:
            return []
        return cand[rngs[i].integers(0, ncand, size=k)].tolist()

    def more(i: int, k: int) -> list[int]:
        if k <= 0:
            return []
        return refill[rngs[i].integers(0, nrefill, size=k)].tolist()

    body_targets = [max(0, t - overhead) for t in targets]
    prefixes: list[list[int]] = [[] for _ in range(n)]
    if spec.unique_prefix and n:
        enc = tok.encode_batch([f"[{seed}-{i}]" for i in range(n)])
        prefixes = [e if len(e) < bt else [] for e, bt in zip(enc, body_targets, strict=True)]
    ids: list[list[int]] = [
        prefixes[i] + fresh(i, body_targets[i] - len(prefixes[i])) for i in range(n)
    ]

    best_text: list[str | None] = [None] * n
    best_val: list[int] = [0] * n
    last_text: list[str] = [""] * n
    last_val: list[int] = [0] * n
    tries: list[int] = [0] * n
    pending = list(range(n))
    for _ in range(spec.max_fix_iterations):
        if not pending:
            break
        texts = tok.decode_batch([ids[i] for i in pending])
        meas = tok.measure_batch(texts)
        nxt: list[int] = []
        for i, text, (cnt, body) in zip(pending, texts, meas, strict=True):
            val = len(body) if chat else cnt
            last_text[i], last_val[i] = text, val
            if not special.isdisjoint(body):
                # the decoded text spells a special token: start this prompt over
                ids[i] = prefixes[i] + fresh(i, body_targets[i] - len(prefixes[i]))
                nxt.append(i)
                continue
            diff = val - targets[i]
            if best_text[i] is None or abs(diff) < abs(best_val[i] - targets[i]):
                best_text[i], best_val[i] = text, val
            if diff == 0 or (diff > 0 and not body):
                continue  # hit, or too short a target for the added specials
            tries[i] += 1
            if diff > 0:
                # After a failed trim, cut deeper and refill with fresh ids: a
                # cut inside a multi-byte character or a word re-encodes longer
                # and plain trimming would cycle.
                want = len(body) - diff
                keep = max(0, want - (tries[i] - 1))
                ids[i] = body[:keep] + more(i, want - keep)
            else:
                ids[i] = body + more(i, -diff)
            nxt.append(i)
        pending = nxt
    out_texts: list[str] = []
    out_vals: list[int] = []
    for i in range(n):
        bt = best_text[i]
        if bt is None:
            out_texts.append(last_text[i])
            out_vals.append(last_val[i])
        else:
            out_texts.append(bt)
            out_vals.append(best_val[i])
    return out_texts, out_vals


_WORDS_TEXT = (
    "time year people way day man thing woman life child world school state family student "
    "group country problem hand part place case week company system program question work "
    "government number night point home water room mother area money story fact month lot "
    "right study book eye job word business issue side kind head house service friend father "
    "power hour game line end member law car city community name president team minute idea "
    "kid body information back parent face others level office door health person art war "
    "history party result change morning reason research girl guy moment air teacher force "
    "education foot boy age policy music market sense nation plan college interest death "
    "experience effect use class control care field development role effort rate heart drug "
    "show leader light voice wife police mind price report decision son view relationship town "
    "road arm difference value building action model season society tax director position "
    "player record paper space ground form event official matter center couple site project "
    "activity star table need court oil situation cost industry figure street image phone data "
    "picture practice piece land product doctor wall patient worker news test movie north love "
    "support technology step baby computer type attention film tree source organization hair "
    "window evidence population site network bank green blue quick slow bright open simple"
)
_WORDS = tuple(_WORDS_TEXT.split())


def _fitted_word_texts(
    counter: TokenCounter, targets: Sequence[int], seed: int, spec: WorkloadSpec, chat: bool
) -> tuple[list[str], list[int]]:
    """Count-only path: random word text cut on a character to the target count.

    Searches the cut per prompt (interpolation with bisection as a safeguard,
    all prompts in lockstep so each round is one batch call) for the shortest
    prefix whose count reaches the target; keeps the closer of the two sides.
    """
    n = len(targets)
    words = np.asarray(_WORDS)

    def word_text(i: int, rnd: int, k: int) -> str:
        return " ".join(words[_rng(seed, _STREAM_TEXT, i, rnd).integers(0, len(words), k)].tolist())

    texts = [
        (f"[{seed}-{i}] " if spec.unique_prefix else "") + word_text(i, 0, max(8, int(t * 1.5) + 8))
        for i, t in enumerate(targets)
    ]
    vhi = _content_values(counter, texts, chat)
    for rnd in range(1, 12):  # make every text long enough
        short = [i for i in range(n) if vhi[i] < targets[i]]
        if not short:
            break
        for i in short:
            texts[i] += " " + word_text(i, rnd, max(8, 2 * (targets[i] - vhi[i]) + 8))
        grown = _content_values(counter, [texts[i] for i in short], chat)
        for i, v in zip(short, grown, strict=True):
            vhi[i] = v
    v0 = _content_values(counter, [""], chat)[0] if n else 0
    lo, vlo = [0] * n, [v0] * n
    hi = [len(s) for s in texts]
    for i in range(n):
        if v0 >= targets[i]:  # even the empty prompt reaches the target
            hi[i], vhi[i] = 0, v0
    bisect = [False] * n
    while True:
        active = [i for i in range(n) if hi[i] - lo[i] > 1 and vhi[i] >= targets[i] > vlo[i]]
        if not active:
            break
        mids: list[int] = []
        for i in active:
            if bisect[i] or vhi[i] == vlo[i]:
                m = (lo[i] + hi[i]) // 2
            else:
                frac = (targets[i] - 0.5 - vlo[i]) / (vhi[i] - vlo[i])
                m = lo[i] + round(frac * (hi[i] - lo[i]))
            mids.append(min(max(m, lo[i] + 1), hi[i] - 1))
        cut = [texts[i][:m] for i, m in zip(active, mids, strict=True)]
        for i, m, v in zip(active, mids, _content_values(counter, cut, chat), strict=True):
            width = hi[i] - lo[i]
            if v >= targets[i]:
                hi[i], vhi[i] = m, v
            else:
                lo[i], vlo[i] = m, v
            bisect[i] = (hi[i] - lo[i]) * 2 > width  # poor progress: bisect next
    out_t: list[str] = []
    out_v: list[int] = []
    for i in range(n):
        if vhi[i] - targets[i] <= targets[i] - vlo[i]:
            out_t.append(texts[i][: hi[i]])
            out_v.append(vhi[i])
        else:
            out_t.append(texts[i][: lo[i]])
            out_v.append(vlo[i])
    return out_t, out_v


def build_workload(spec: WorkloadSpec, counter: TokenCounter, n: int, seed: int) -> Workload:
    """Build ``n`` prompts for ``spec``, measuring every length with ``counter``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    t0 = time.perf_counter()
    chat = spec.api == "chat"
    estimated = counter.source == "estimate"
    notes: list[str] = []
    out_spec = spec.output_lengths()
    out_lens = sample_lengths(out_spec, n, _rng(seed, _STREAM_OUTPUT))

    if spec.kind == "dataset":
        prompts, in_desc = _dataset_prompts(spec, counter, n, out_lens, chat, estimated, notes)
    else:
        in_spec = spec.input_lengths()
        in_desc = in_spec.describe()
        targets = sample_lengths(in_spec, n, _rng(seed, _STREAM_INPUT))
        if is_tokenizer(counter):
            texts, vals = _exact_random_texts(counter, targets, seed, spec, chat)
        else:
            texts, vals = _fitted_word_texts(counter, targets, seed, spec, chat)
            if estimated:
                notes.append(
                    "estimate counter: prompts are word text sized by an estimate; "
                    "real token counts are unknown"
                )
            else:
                why = getattr(counter, "decode_unavailable_reason", None)
                notes.append(
                    "counter cannot decode token ids"
                    + (f" ({why})" if why else "")
                    + ": prompts are random word text cut to length by the counter"
                )
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
    if chat:
        notes.append(
            "chat: prompt_tokens counts message content only; the chat template's "
            "overhead is not included (measure it from usage.prompt_tokens)"
        )
    max_len = getattr(counter, "max_model_len", None)
    if isinstance(max_len, int) and max_len > 0:
        over = sum(1 for p in prompts if p.prompt_tokens + p.max_tokens > max_len)
        if over:
            notes.append(
                f"{over} prompts exceed the server's max_model_len={max_len} with max_tokens"
            )
    misses = [abs(p.miss) for p in prompts if p.miss]
    return Workload(
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


def _dataset_prompts(
    spec: WorkloadSpec,
    counter: TokenCounter,
    n: int,
    out_lens: list[int],
    chat: bool,
    estimated: bool,
    notes: list[str],
) -> tuple[list[PromptSpec], dict[str, Any]]:
    assert spec.dataset_path is not None
    path = Path(spec.dataset_path)
    records = load_jsonl_dataset(path)
    if not chat:
        for r in records:
            if not isinstance(r.prompt, str):
                raise _bad(
                    path,
                    r.line,
                    "a 'messages' record cannot be sent to the completions API",
                    "use api='chat', or give a 'prompt' string instead",
                )
    chosen = [records[i % len(records)] for i in range(n)]
    if n > len(records):
        notes.append(
            f"dataset has {len(records)} records for {n} prompts: records repeat "
            "(repeated prompts can hit the prefix cache)"
        )
    if chat:
        msgs = [
            r.prompt if isinstance(r.prompt, list) else [{"role": "user", "content": r.prompt}]
            for r in chosen
        ]
        pieces = [_message_texts(m) for m in msgs]
        flat = [s for ps in pieces for s in ps]
        vals = _content_values(counter, flat, True)
        counts: list[int] = []
        pos = 0
        for ps in pieces:
            counts.append(int(sum(vals[pos : pos + len(ps)])))
            pos += len(ps)
        prompt_objs: list[str | list[Message]] = list(msgs)
    else:
        texts = [r.prompt for r in chosen]
        counts = counter.count_batch(texts)  # type: ignore[arg-type]
        prompt_objs = list(texts)  # type: ignore[arg-type]
    prompts = [
        PromptSpec(
            prompt=po,
            prompt_tokens=c,
            target_prompt_tokens=c,
            max_tokens=r.output_len if r.output_len is not None else o,
            estimated=estimated,
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
