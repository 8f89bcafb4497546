"""Which container runtime a SLURM job's ``launcher: docker`` config runs under.

Clusters that run containers through SLURM mostly have pyxis (enroot), a SPANK
plugin that adds ``--container-image`` to srun: there InferX starts the engine as
``srun --container-image`` (the ``srun`` launcher). A cluster without it may still
have a Docker daemon on its nodes: there the config stays ``launcher: docker`` and
the runner, inside the job step, runs ``docker run`` itself. The option
``container_runtime`` (``auto``, ``pyxis``, ``docker``) decides; ``auto`` asks the
cluster's srun.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

from inferx_core.executors.slurm_script import SlurmOptions


@functools.cache
def srun_has_pyxis() -> bool:
    """Whether this cluster's srun takes pyxis' --container-image (its SPANK plugin adds
    the option to ``srun --help``); no srun, or one that fails to answer: False."""
    srun = shutil.which("srun")
    if srun is None:
        return False
    try:
        proc = subprocess.run(
            [srun, "--help"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return "--container-image" in proc.stdout + proc.stderr


def uses_pyxis(opts: SlurmOptions) -> bool:
    """pyxis when asked, or (``auto``) where srun has it; else ``docker run`` in the step."""
    if opts.container_runtime == "auto":
        return srun_has_pyxis()
    return opts.container_runtime == "pyxis"
