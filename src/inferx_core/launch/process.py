"""The ``process`` launcher: the engine as a local process in its own process group.

Its output goes to ``engine.log`` in the run folder. ``stop`` sends SIGTERM to
the whole group (and to any descendant that left it), waits a grace period,
then SIGKILLs whatever is left, so nothing the engine started survives; a
Ctrl-C during that grace kills at once. A watchdog process
(:mod:`inferx_core.launch.watchdog`) does the same if InferX itself dies.

The run folder placeholder: a plugin does not know where the run folder will
be when it builds a spec, yet a file from ``spec.files`` (written into that
folder before the start) must be named in argv. So every ``{run_dir}`` in
``argv`` and in ``env`` values stands for the run folder *as the engine sees
it*, and each launcher substitutes it just before the start (and in
``describe``): the absolute host path here, the container mount point
(``/inferx/run``) for docker. A new launcher must do the same
(:func:`resolve_run_dir`).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Any

from inferx_core.config.secrets import remembered_secrets, scrub
from inferx_core.launch.envutil import engine_environment
from inferx_core.launch.watchdog import Watchdog, start_watchdog
from inferx_core.sdk.launch_spec import LaunchSpec

LOG_NAME = "engine.log"
#: Stands for the run folder in ``LaunchSpec.argv`` and ``env`` values (see module doc).
RUN_DIR_PLACEHOLDER = "{run_dir}"
_RLIMITS = {
    "core": resource.RLIMIT_CORE,
    "nofile": resource.RLIMIT_NOFILE,
    "memlock": resource.RLIMIT_MEMLOCK,
    "stack": resource.RLIMIT_STACK,
    "nproc": resource.RLIMIT_NPROC,
}


def resolve_run_dir(spec: LaunchSpec, run_dir: str) -> LaunchSpec:
    """``spec`` with every ``{run_dir}`` in argv items and env values replaced by ``run_dir``.

    ``run_dir`` is the run folder as the engine sees it (a host path, or a
    container path). A spec without the placeholder is returned unchanged.
    """

    def sub(value: str) -> str:
        return value.replace(RUN_DIR_PLACEHOLDER, run_dir)

    if not any(RUN_DIR_PLACEHOLDER in v for v in (*spec.argv, *spec.env.values())):
        return spec
    return spec.model_copy(
        update={
            "argv": tuple(sub(a) for a in spec.argv),
            "env": {k: sub(v) for k, v in spec.env.items()},
        }
    )


def write_run_files(spec: LaunchSpec, run_dir: Path) -> None:
    """Create ``run_dir`` and write ``spec.files`` into it (names only, no sub-paths)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, content in spec.files.items():
        if Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"spec.files name {name!r} must be a plain file name")
        (run_dir / name).write_text(content)


def free_port(host: str = "127.0.0.1", avoid: set[int] | None = None) -> int:
    """A port nothing listens on now; ports in ``avoid`` (handed out before) are skipped."""
    avoid = avoid or set()
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = sock.getsockname()[1]
        if port not in avoid:
            return port
    raise RuntimeError("could not find a free port")


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


#: How long a failed request waits to see the engine gone: a killed engine resets its
#: sockets while it exits, so the client's error can come before the process is reapable.
ENGINE_EXIT_SETTLE_S = 1.0


def exited_within(handle: Any, seconds: float) -> bool:
    """True once ``handle.alive()`` is false, polling up to ``seconds`` (any launcher)."""
    deadline = time.monotonic() + seconds
    while handle.alive():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def tail_lines(path: Path, lines: int = 40, max_bytes: int = 256 * 1024) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except OSError:
        return ""
    return "\n".join(deque(data.decode("utf-8", "replace").splitlines(), maxlen=lines))


def _limits_setter(ulimits: dict[str, int], cpus: tuple[int, ...] = ()) -> Any:
    """Run in the child before exec: resource limits, and the CPU affinity the
    engine's whole process tree inherits (the ``taskset`` of a process launch)."""

    def apply() -> None:
        for name, value in ulimits.items():
            limit = _RLIMITS[name]
            resource.setrlimit(limit, (value, value))
        if cpus:
            os.sched_setaffinity(0, cpus)

    return apply


def scrub_file(path: Path) -> None:
    """Rewrite ``path`` with every registered secret value masked (only when one is in it)."""
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return
    clean = scrub(text)
    if clean == text:
        return
    tmp = path.with_name(f".{path.name}.scrub")
    with contextlib.suppress(OSError):
        tmp.write_bytes(clean.encode("utf-8", "surrogateescape"))
        os.replace(tmp, path)


class ProcessHandle:
    """A running engine process group."""

    def __init__(self, proc: subprocess.Popen[bytes], spec: LaunchSpec, log_path: Path) -> None:
        self.proc = proc
        self.spec = spec
        self.log_path = log_path
        self.base_url = spec.base_url
        self.pgid = os.getpgid(proc.pid)
        self._stopped = False
        # Stops the engine if InferX dies without stopping it (kill -9, OOM): see watchdog.
        # It also masks the secrets in the log then, which stop() would have done.
        self.watchdog: Watchdog | None = start_watchdog(
            proc.pid,
            stop_argv=self.orphan_stop_argv(),
            log_path=log_path,
            secrets=remembered_secrets(),
        )

    def orphan_stop_argv(self) -> list[str] | None:
        """A command the watchdog runs first when InferX died (docker: kill the container)."""
        return None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def returncode(self) -> int | None:
        return self.proc.poll()

    def log_tail(self, lines: int = 40) -> str:
        return tail_lines(self.log_path, lines)

    def _descendants(self) -> list[Any]:
        import psutil

        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            return []

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM the group, wait ``grace_s``, SIGKILL what is left (idempotent).

        Ctrl-C (any KeyboardInterrupt) during the grace kills the group at once.
        """
        if self._stopped:
            return
        self._stopped = True
        try:
            self._terminate(grace_s)
        except KeyboardInterrupt:
            self.kill_now()
            raise
        self._release_watchdog()
        scrub_file(self.log_path)  # the engine may have printed a key (vLLM logs its args)

    def kill_now(self) -> None:
        """SIGKILL the group and every descendant now (a second Ctrl-C), no grace."""
        import psutil

        stragglers = self._descendants()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        for child in stragglers:
            with contextlib.suppress(psutil.Error):
                child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        psutil.wait_procs(stragglers, timeout=2)
        self._release_watchdog()

    def _release_watchdog(self) -> None:
        if self.watchdog is not None and not self.alive():
            self.watchdog.release()
            self.watchdog = None

    def _terminate(self, grace_s: float) -> None:
        import psutil

        # Children that called setsid() left our group; remember them first.
        stragglers = self._descendants()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)
        for child in stragglers:
            with contextlib.suppress(psutil.Error):
                child.terminate()
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        _, alive = psutil.wait_procs(stragglers, timeout=max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        for child in alive:
            with contextlib.suppress(psutil.Error):
                child.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        psutil.wait_procs(alive, timeout=5)


class ProcessLauncher:
    """Runs ``spec.argv`` directly (no shell) in a new session/process group."""

    name = "process"
    #: What :meth:`start` returns (the srun launcher's client needs a step-aware kill).
    handle_class: type[ProcessHandle] = ProcessHandle

    def describe(self, spec: LaunchSpec, run_dir: Path) -> dict[str, Any]:
        spec = resolve_run_dir(spec, str(run_dir.resolve()))
        return {
            "launcher": self.name,
            "argv": list(spec.argv),
            "env": dict(spec.env),
            "unset_env": list(spec.unset_env),
            "cwd": spec.workdir,
            "log": str(run_dir / LOG_NAME),
            "ulimits": dict(spec.ulimits),
            "cpus": list(spec.cpus),
        }

    def start(self, spec: LaunchSpec, run_dir: Path) -> ProcessHandle:
        if spec.image is not None:
            raise ValueError(
                f"spec has image {spec.image!r}; the process launcher runs argv directly, "
                "use `launcher: docker` for images"
            )
        unknown = set(spec.ulimits) - set(_RLIMITS)
        if unknown:
            raise ValueError(f"unknown ulimit(s) {sorted(unknown)}; known: {sorted(_RLIMITS)}")
        write_run_files(spec, run_dir)
        spec = resolve_run_dir(spec, str(run_dir.resolve()))
        log_path = run_dir / LOG_NAME
        env = engine_environment(spec, os.environ)
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                list(spec.argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=spec.workdir or None,
                start_new_session=True,
                preexec_fn=(
                    _limits_setter(dict(spec.ulimits), spec.cpus)
                    if spec.ulimits or spec.cpus
                    else None
                ),
            )
        return self.handle_class(proc, spec, log_path)
