"""InferX's bench path vs ``vllm bench serve``, side by side on one scripted server.

Usage::

    .venv/bin/python benchmarks/harness_overhead.py [--quick] [--repeats 3]
        [--engine-python .venv-engine/bin/python]

Both clients are the real harnesses, not re-implementations:

* InferX: :func:`inferx_core.pipeline.point.measure.run_bench` with a :class:`BenchConfig`
  (completions API, closed loop, ``output_dir=None``, progress off), run in
  this process.
* vLLM: ``vllm bench serve`` (``vllm.benchmarks.serve.add_cli_args`` +
  ``main``), run by a small runner script with the engine venv's Python (its
  ``vllm`` console script is not used). The runner imports vLLM once and then
  runs one benchmark per command it reads on stdin, so the ~10 s import is
  paid once, not per run.

Part 1 (overhead): a zero-delay scripted server (``ServerProcess``, its own
process) streams ``max_tokens`` one-token chunks per request (it honours
``max_tokens``/``ignore_eos``); concurrency 64, 32-token prompts, 256-token
outputs, 256 requests, no warmup. Each client's CPU time (``process_time``:
user + system, all threads of the client process) is taken over the load
window only: from the first dispatch (InferX: the first request sent by the
scheduler; vLLM: the start of its request generator, which creates the
request tasks) to the last request's completion, read in-process by a thin
wrapper around each harness's per-request function. Prompt generation,
tokenizer loading, imports and metric computation are outside the window
(the whole-call CPU is printed per run too). Chunks are counted from the
records (InferX: ``chunk_ns``; vLLM: 1 + ``len(itl)`` per successful
request). Out tok/s is chunks / window wall time, the same definition for
both. The clients run interleaved, ``--repeats`` times each, after one
untimed warm-up run each. With a zero-delay server, reads coalesce whenever a
client falls behind (several SSE events per read), which favours slower
clients; ``--itl-ms 5`` paces the chunks so every chunk is its own read.

Part 2 (timing): a server with TTFT 40 ms / ITL 10 ms; closed loop at
concurrency 4 and 32 with identical request shapes (32 in, 128 out, fixed),
so all streams finish and restart together every round. TTFT error = the
harness's own ``mean_ttft_ms`` minus 40 (vLLM's read from its
``--save-result`` JSON); ITL error = ``mean_itl_ms`` minus 10. Both include
the server's own timer lateness (asyncio timers fire up to ~1 ms late).

Goals: <= 12 ms CPU per 1k chunks and below vLLM's client; mean TTFT error at
c=32 < 3 ms; |mean ITL error| < 0.1 ms (c=4 and c=32).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from inferx_core.config.models import BenchConfig, LoadProfile, Workload
from inferx_core.load.schedule import scheduler as _scheduler
from inferx_core.pipeline.bench.api import run_bench
from inferx_core.testing import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
MODEL = "test-model"
ISL = 32
TTFT_MS, ITL_MS = 40.0, 10.0
INFERX, VLLM = "InferX", "vllm bench serve"

# Reference figures measured earlier on this 2-core VM (see benchmarks/README.md).
REFERENCE = (
    "reference (earlier runs, this VM): vLLM's client 16-17 ms CPU / 1k chunks; "
    "TTFT error at c=32 +20 to +28 ms for vLLM / AIPerf / GuideLLM, "
    "a bare asyncio client +2.4 ms"
)

# --------------------------------------------------------------------------- #
# The vLLM side: a runner executed with the engine venv's Python.
# --------------------------------------------------------------------------- #

RUNNER = r'''
"""Runs `vllm bench serve` once per JSON argv line on stdin; one result line each."""
import json
import os
import sys
import time
import traceback

_out = os.fdopen(os.dup(1), "w", buffering=1)  # results only
os.dup2(2, 1)  # vLLM's own printing goes to stderr (a log file)
sys.stdout = sys.stderr

import vllm.benchmarks.serve as serve  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

parser = FlexibleArgumentParser(prog="vllm bench serve")
serve.add_cli_args(parser)
ORIG_FUNCS = dict(serve.ASYNC_REQUEST_FUNCS)
ORIG_GET_REQUEST = serve.get_request


def run(argv):
    args = parser.parse_args(argv)
    w = {"cpu0": None, "wall0": None, "cpu1": None, "wall1": None, "chunks": 0, "ok": 0, "n": 0}

    async def get_request(*a, **kw):
        # The measured window opens when the dispatch loop starts.
        if w["cpu0"] is None:
            w["cpu0"], w["wall0"] = time.process_time(), time.perf_counter()
        async for item in ORIG_GET_REQUEST(*a, **kw):
            yield item

    func = ORIG_FUNCS[args.backend]

    async def timed(request_func_input, session, pbar=None):
        out = await func(request_func_input=request_func_input, session=session, pbar=pbar)
        if w["cpu0"] is not None:  # not a warmup request
            w["cpu1"], w["wall1"] = time.process_time(), time.perf_counter()
            w["n"] += 1
            if out.success:
                w["ok"] += 1
                w["chunks"] += 1 + len(out.itl)
        return out

    serve.get_request = get_request
    serve.ASYNC_REQUEST_FUNCS[args.backend] = timed
    try:
        c0 = time.process_time()
        serve.main(args)
        main_cpu = time.process_time() - c0
    finally:
        serve.get_request = ORIG_GET_REQUEST
        serve.ASYNC_REQUEST_FUNCS.update(ORIG_FUNCS)
    if w["cpu1"] is None:
        raise RuntimeError("no measured request completed")
    return {
        "window_cpu_s": w["cpu1"] - w["cpu0"],
        "window_wall_s": w["wall1"] - w["wall0"],
        "chunks": w["chunks"],
        "ok": w["ok"],
        "n": w["n"],
        "total_cpu_s": main_cpu,
    }


_out.write("HX_READY\n")
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        _out.write("HX_RESULT " + json.dumps(run(json.loads(line))) + "\n")
    except BaseException as exc:  # argparse exits with SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        traceback.print_exc()
        _out.write("HX_ERROR " + json.dumps(repr(exc)) + "\n")
'''


class VllmBench:
    """A long-lived runner process of ``vllm bench serve`` in the engine venv."""

    def __init__(self, python: Path, workdir: Path, tokenizer: Path) -> None:
        self.workdir = workdir
        self.tokenizer = tokenizer
        self.log_path = workdir / "vllm_runner.log"
        script = workdir / "vllm_runner.py"
        script.write_text(RUNNER)
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in close()
        env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
        self.proc = subprocess.Popen(
            [str(python), str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            cwd=workdir,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self._runs = 0
        try:
            self._expect("HX_READY", timeout=180)
        except RuntimeError:
            self.close()
            raise

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put("HX_EOF")

    def _expect(self, tag: str, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"vLLM runner: no answer in {timeout:.0f} s{self._tail()}") from None
        if not line.startswith(tag):
            raise RuntimeError(f"vLLM runner: got {line[:300]!r}{self._tail()}")
        return line[len(tag) :].strip()

    def _tail(self) -> str:
        self._log.flush()
        with contextlib.suppress(OSError):
            tail = self.log_path.read_text(errors="replace").splitlines()[-25:]
            return "\n  log: " + "\n  log: ".join(tail)
        return ""

    def run(
        self,
        base_url: str,
        *,
        conc: int,
        n: int,
        osl: int,
        warmup: int,
    ) -> dict[str, Any]:
        self._runs += 1
        name = f"vllm-{self._runs}.json"
        argv = [
            "--backend", "vllm",
            "--base-url", base_url,
            "--endpoint", "/v1/completions",
            "--model", MODEL,
            "--tokenizer", str(self.tokenizer),
            "--dataset-name", "random",
            "--random-input-len", str(ISL),
            "--random-output-len", str(osl),
            "--random-range-ratio", "0",
            "--num-prompts", str(n),
            "--max-concurrency", str(conc),
            "--num-warmups", str(warmup),
            "--ignore-eos",
            "--request-rate", "inf",
            "--temperature", "0",
            "--seed", "0",
            "--disable-tqdm",
            "--save-result",
            "--result-dir", str(self.workdir),
            "--result-filename", name,
        ]  # fmt: skip
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(argv) + "\n")
        self.proc.stdin.flush()
        out = json.loads(self._expect("HX_RESULT", timeout=300))
        saved = json.loads((self.workdir / name).read_text())
        out.update(
            mean_ttft_ms=saved["mean_ttft_ms"],
            median_ttft_ms=saved["median_ttft_ms"],
            p99_ttft_ms=saved["p99_ttft_ms"],
            mean_itl_ms=saved["mean_itl_ms"],
            completed=saved["completed"],
            own_output_throughput=saved["output_throughput"],
        )
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._log.close()


# --------------------------------------------------------------------------- #
# The InferX side: run_bench in this process.
# --------------------------------------------------------------------------- #


@contextlib.contextmanager
def _inferx_window(w: dict[str, Any]) -> Iterator[None]:
    """Stamp CPU/wall at the first measured dispatch and at every measured completion."""
    orig = _scheduler.send_streaming_request

    async def timed(pool: Any, path: str, payload: bytes, record: Any, **kw: Any) -> Any:
        if not record.warmup and w["cpu0"] is None:
            w["cpu0"], w["wall0"] = time.process_time(), time.perf_counter()
        out = await orig(pool, path, payload, record, **kw)
        if not record.warmup:
            w["cpu1"], w["wall1"] = time.process_time(), time.perf_counter()
        return out

    _scheduler.send_streaming_request = timed
    try:
        yield
    finally:
        _scheduler.send_streaming_request = orig


def inferx_run(base_url: str, *, conc: int, n: int, osl: int, warmup: int) -> dict[str, Any]:
    cfg = BenchConfig(
        base_url=base_url,
        model=MODEL,
        name="harness",
        output_dir=None,
        workload=Workload(api="completions", isl=ISL, osl=osl, range_semantics="fixed"),
        load=LoadProfile(concurrency=[conc], num_prompts=n, warmup=warmup, request_timeout_s=300),
    )
    w: dict[str, Any] = {"cpu0": None, "wall0": None, "cpu1": None, "wall1": None}
    gc.collect()
    with _inferx_window(w):
        c0 = time.process_time()
        outcome = run_bench(cfg, progress=False)[0]
        total_cpu = time.process_time() - c0
    if w["cpu1"] is None:
        raise RuntimeError("InferX: no measured request completed")
    measured = [r for r in outcome.records if not r.warmup]
    res = outcome.result.flat()
    return {
        "window_cpu_s": w["cpu1"] - w["cpu0"],
        "window_wall_s": w["wall1"] - w["wall0"],
        "chunks": sum(len(r.chunk_ns) for r in measured),
        "ok": sum(1 for r in measured if r.ok),
        "n": len(measured),
        "total_cpu_s": total_cpu,
        "mean_ttft_ms": res["mean_ttft_ms"],
        "median_ttft_ms": res["median_ttft_ms"],
        "p99_ttft_ms": res["p99_ttft_ms"],
        "mean_itl_ms": res["mean_itl_ms"],
        "completed": res["completed"],
        "own_output_throughput": res["output_throughput"],
    }


# --------------------------------------------------------------------------- #
# The two parts.
# --------------------------------------------------------------------------- #


def _clients(vllm: VllmBench | None) -> dict[str, Any]:
    clients: dict[str, Any] = {INFERX: inferx_run}
    if vllm is not None:
        clients[VLLM] = vllm.run
    return clients


def overhead(args: argparse.Namespace, vllm: VllmBench | None) -> dict[str, dict[str, list]]:
    clients = _clients(vllm)
    out: dict[str, dict[str, list]] = {name: {"cpu": [], "tps": []} for name in clients}
    pace = "zero-delay" if not args.itl_ms else f"ITL {args.itl_ms:g} ms"
    print(
        f"== Part 1: client CPU, {pace} scripted server (separate process), "
        f"c={args.concurrency}, {args.requests} requests x {args.osl} chunks, "
        f"{args.repeats} repeat(s), interleaved"
    )
    with ServerProcess(itl_ms=args.itl_ms) as srv:
        for run in clients.values():  # untimed warm-up: lazy imports, first paths
            run(srv.base_url, conc=args.concurrency, n=args.concurrency, osl=16, warmup=0)
        for rep in range(args.repeats):
            for name, run in clients.items():
                r = run(
                    srv.base_url, conc=args.concurrency, n=args.requests, osl=args.osl, warmup=0
                )
                per_1k = r["window_cpu_s"] * 1e3 / (r["chunks"] / 1000)
                tps = r["chunks"] / r["window_wall_s"]
                out[name]["cpu"].append(per_1k)
                out[name]["tps"].append(tps)
                expected = args.requests * args.osl
                warn = "" if r["chunks"] == expected else f"  WARNING: {expected} expected"
                print(
                    f"  [{rep + 1}] {name:17s} window cpu {r['window_cpu_s']:5.2f} s "
                    f"wall {r['window_wall_s']:5.2f} s  chunks {r['chunks']}  "
                    f"ok {r['ok']}/{r['n']}  -> {per_1k:5.1f} ms CPU/1k chunks, "
                    f"{tps:7.0f} tok/s  (own figure {r['own_output_throughput']:7.0f} tok/s; "
                    f"whole call {r['total_cpu_s']:5.2f} s CPU){warn}"
                )
    return out


def ttft_error(args: argparse.Namespace, vllm: VllmBench | None) -> dict[tuple[str, int], dict]:
    clients = _clients(vllm)
    runs: dict[tuple[str, int], list[dict]] = {}
    print(
        f"\n== Part 2: TTFT/ITL error, server TTFT {TTFT_MS:g} ms / ITL {ITL_MS:g} ms, "
        f"{ISL} in / {args.ttft_osl} out (fixed), {args.rounds} rounds per slot "
        f"(+1 warm-up round), {args.ttft_repeats} repeat(s)"
    )
    with ServerProcess(ttft_ms=TTFT_MS, itl_ms=ITL_MS) as srv:
        for rep in range(args.ttft_repeats):
            for conc in args.ttft_concurrency:
                for name, run in clients.items():
                    r = run(
                        srv.base_url,
                        conc=conc,
                        n=conc * args.rounds,
                        osl=args.ttft_osl,
                        warmup=conc,
                    )
                    runs.setdefault((name, conc), []).append(r)
                    print(
                        f"  [{rep + 1}] {name:17s} c={conc:<3d} n={r['completed']:<4d} "
                        f"TTFT mean {r['mean_ttft_ms']:6.2f} p50 {r['median_ttft_ms']:6.2f} "
                        f"p99 {r['p99_ttft_ms']:6.2f} ms  "
                        f"-> err {r['mean_ttft_ms'] - TTFT_MS:+6.2f}"
                        f"  | ITL mean {r['mean_itl_ms']:6.3f} -> err "
                        f"{r['mean_itl_ms'] - ITL_MS:+6.3f} ms"
                    )
    # Median over repeats of each run's mean error.
    return {
        key: {
            "ttft": statistics.median(r["mean_ttft_ms"] - TTFT_MS for r in rs),
            "itl": statistics.median(r["mean_itl_ms"] - ITL_MS for r in rs),
        }
        for key, rs in runs.items()
    }


def report(
    args: argparse.Namespace,
    ov: dict[str, dict[str, list]] | None,
    tt: dict[tuple[str, int], dict] | None,
    have_vllm: bool,
) -> None:
    names = [INFERX] + ([VLLM] if have_vllm else [])
    c_lo, c_hi = args.ttft_concurrency[0], args.ttft_concurrency[-1]
    print(f"\n== Summary ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs)")
    head = (
        f"{'client':17s} | {'out tok/s':>9s} | {'CPU ms/1k chunks':>16s} | "
        f"{f'TTFT err c={c_lo}':>13s} | {f'TTFT err c={c_hi}':>14s} | {f'ITL err c={c_hi}':>13s}"
    )
    print(head)
    print("-" * len(head))
    for name in names:
        tps = cpu = "n/a"
        if ov:
            tps = f"{statistics.median(ov[name]['tps']):9.0f}"
            cpu = f"{statistics.median(ov[name]['cpu']):5.1f} (min {min(ov[name]['cpu']):4.1f})"
        lo = hi = itl = "n/a"
        if tt:
            lo = f"{tt[(name, c_lo)]['ttft']:+7.2f} ms"
            hi = f"{tt[(name, c_hi)]['ttft']:+7.2f} ms"
            itl = f"{tt[(name, c_hi)]['itl']:+7.3f} ms"
        print(f"{name:17s} | {tps:>9s} | {cpu:>16s} | {lo:>13s} | {hi:>14s} | {itl:>13s}")
    ov_how = "median over repeats, min in brackets" if args.repeats > 1 else "one run"
    tt_how = "median over repeats of the mean" if args.ttft_repeats > 1 else "mean of one run"
    print(
        f"out tok/s, CPU: {ov_how}; TTFT/ITL err: {tt_how}, measured minus the injected "
        f"{TTFT_MS:g} / {ITL_MS:g} ms"
    )
    if not have_vllm:
        print("vLLM's client: not run (engine venv missing or unusable, see above)")

    print("\nGoals (InferX):")

    def goal(label: str, ok: bool | None, detail: str) -> None:
        mark = "n/a" if ok is None else ("met" if ok else "MISSED")
        print(f"  {label:44s} {mark:6s}  {detail}")

    if ov:
        ix = statistics.median(ov[INFERX]["cpu"])
        goal("CPU <= 12 ms per 1k chunks", ix <= 12.0, f"{ix:.1f} ms")
        if have_vllm:
            vl = statistics.median(ov[VLLM]["cpu"])
            goal("CPU below vLLM's client", ix < vl, f"{ix:.1f} vs {vl:.1f} ms ({vl / ix:.2f}x)")
    if tt:
        e = tt[(INFERX, c_hi)]["ttft"]
        goal(f"TTFT error at c={c_hi} < 3 ms", e < 3.0, f"{e:+.2f} ms")
        itl = [tt[(INFERX, c)]["itl"] for c in args.ttft_concurrency]
        goal(
            "|ITL error| < 0.1 ms (every concurrency)",
            max(abs(x) for x in itl) < 0.1,
            ", ".join(
                f"c={c} {x:+.3f} ms" for c, x in zip(args.ttft_concurrency, itl, strict=True)
            ),
        )
    print(REFERENCE)


def _start_vllm(args: argparse.Namespace, workdir: Path) -> VllmBench | None:
    python = Path(args.engine_python)
    if args.no_vllm:
        print("vLLM's client: skipped (--no-vllm); running InferX only")
        return None
    if not python.exists():
        print(f"vLLM engine venv not found ({python}): running InferX only")
        return None
    from inferx_core.demo.tiny_model import build_tiny_model

    tok = build_tiny_model(workdir / "tiny-model")  # HF format; vLLM loads its tokenizer
    t0 = time.perf_counter()
    try:
        vllm = VllmBench(python, workdir, tok)
    except (OSError, RuntimeError) as exc:
        print(f"vLLM's client unusable ({exc}): running InferX only")
        return None
    print(f"vLLM runner ready ({python}, import {time.perf_counter() - t0:.1f} s)")
    return vllm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer requests, 1 repeat")
    ap.add_argument("--requests", type=int, default=256, help="requests per overhead run")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--osl", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--itl-ms",
        type=float,
        default=0.0,
        help="part 1 server pacing: 0 = zero-delay (reads coalesce when a client lags, "
        "which favours slower clients); >0 paces chunks so each is its own read",
    )
    ap.add_argument("--ttft-concurrency", type=int, nargs=2, default=[4, 32])
    ap.add_argument("--rounds", type=int, default=4, help="requests per slot in the TTFT runs")
    ap.add_argument("--ttft-osl", type=int, default=128)
    ap.add_argument("--ttft-repeats", type=int, default=3)
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-ttft", action="store_true")
    ap.add_argument(
        "--engine-python",
        default=str(ROOT / ".venv-engine" / "bin" / "python"),
        help="Python of the venv holding vLLM (its bench client is run with it)",
    )
    ap.add_argument("--no-vllm", action="store_true", help="run InferX only")
    args = ap.parse_args()
    if args.quick:
        args.requests, args.repeats = 64, 1
        args.rounds, args.ttft_repeats = 2, 1

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="inferx-harness-") as tmp:
        vllm = _start_vllm(args, Path(tmp))
        try:
            ov = None if args.skip_overhead else overhead(args, vllm)
            tt = None if args.skip_ttft else ttft_error(args, vllm)
        finally:
            if vllm is not None:
                vllm.close()
        report(args, ov, tt, vllm is not None)
    print(f"(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
