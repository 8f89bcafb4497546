"""Executors: where a whole run executes (SLURM built in; plugins add more).

This package's namespace is public: the job helpers an executor plugin
submits with (docs/hooks.md, ``inferx_executors``). ``plan_units`` groups a
run's configurations into jobs, ``job_root`` / ``new_job_dir`` give the
submission its folder, ``manifest_data`` (with ``secret_environment``) is
the manifest that ``inferx run-job MANIFEST --index I`` runs one job of,
written with ``write_json_atomic`` as ``MANIFEST_NAME``. The executor
contract types (``Executor``, ``ExecutorInfo``, ``JobRef``, ...) are in
``inferx_core`` itself; the modules of this package are internal.

Each name is declared once, by the import below, and imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferx_core import _lazy

if TYPE_CHECKING:  # the public names: each imported on first use (_lazy.attach)
    from inferx_core.executors.jobs import MANIFEST_NAME as MANIFEST_NAME
    from inferx_core.executors.jobs import job_root as job_root
    from inferx_core.executors.jobs import manifest_data as manifest_data
    from inferx_core.executors.jobs import new_job_dir as new_job_dir
    from inferx_core.executors.jobs import plan_units as plan_units
    from inferx_core.executors.jobs import secret_environment as secret_environment
    from inferx_core.results.files import write_json_atomic as write_json_atomic

__all__, __getattr__, __dir__ = _lazy.attach(globals())
