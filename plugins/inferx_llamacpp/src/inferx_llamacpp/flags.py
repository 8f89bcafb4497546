"""The llama-server flags the plugin sets itself, in every spelling a user could give them.

llama-server's parser (``common/arg.cpp``) knows each option under several
names (``-c``/``--ctx-size``), turns ``_`` into ``-`` in ``--`` names, and lets
the last of two spellings win without a word: ``extra_argv: [-c, "99"]`` beside
the plugin's ``--ctx-size 4096`` gave the server a second context size. So a
user flag is matched against every alias of every reserved option, as
``--flag``, ``--flag=VALUE``, ``--flag_with_underscores`` and a short flag with
its value glued on (``-c99``), in ``engine_args`` keys and ``extra_argv`` alike,
and refused naming the config field that sets it.
"""

from __future__ import annotations

from collections.abc import Iterable

from inferx_core import ServerConfig, UserFacingError

__all__ = ["RESERVED", "SPECULATIVE_FLAGS", "check_user_flags", "engine_arg_flag", "reserved_as"]

#: (llama-server's names of one option, the config field the plugin sets it from).
RESERVED: tuple[tuple[tuple[str, ...], str], ...] = (
    (("-m", "--model"), "model"),
    (("--host",), "host"),
    (("--port",), "port"),
    (("-a", "--alias"), "served_model_name"),
    (("-np", "--parallel"), "max_num_seqs"),
    (("-c", "--ctx-size"), "max_model_len"),
    (("-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"), "max_model_len"),
    (("--cache-prompt", "--no-cache-prompt"), "prefix_caching"),
    (("-cram", "--cache-ram"), "prefix_caching"),
    (("-sm", "--split-mode"), "parallelism.tp / parallelism.pp"),
)
#: Set from ``speculative:`` when a config has it (engine_args may then not set them too).
SPECULATIVE_FLAGS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("--spec-type",), "speculative.method"),
    (("--spec-draft-model", "-md", "--model-draft"), "speculative.draft_model"),
    (("--spec-draft-n-max",), "speculative.num_speculative_tokens"),
    (("--spec-ngram-simple-size-n",), "speculative.prompt_lookup_min/max"),
    (("--spec-ngram-simple-size-m",), "speculative.num_speculative_tokens"),
)


def _matches(token: str, alias: str) -> bool:
    name = token.split("=", 1)[0]
    if name.startswith("--"):
        name = name.replace("_", "-")  # llama-server reads --ctx_size as --ctx-size
    if name == alias:
        return True
    # a short flag with its value glued on: -c99, -c-1 (never -cb, another flag)
    rest = token[len(alias) :]
    glued = bool(rest) and rest[0] in "0123456789-."
    return not alias.startswith("--") and token.startswith(alias) and glued


def reserved_as(token: str, table: Iterable[tuple[tuple[str, ...], str]]) -> tuple[str, str] | None:
    """(the option's long name, the field that sets it) when ``token`` spells a reserved flag."""
    if not token.startswith("-") or token[1:2].isdigit():
        return None  # a value (a negative number), not a flag
    for names, field in table:
        if any(_matches(token, alias) for alias in names):
            return next(n for n in names if n.startswith("--")), field
    return None


def engine_arg_flag(key: str) -> str:
    """The flag an ``engine_args`` key stands for: ``n_gpu_layers`` -> ``--n-gpu-layers``;
    a key written as a flag (``-c``, ``--ctx-size``) is taken as written."""
    if key.startswith("-"):
        return key
    return "--" + key.replace("_", "-")


def check_user_flags(server: ServerConfig) -> None:
    """Refuse an ``engine_args`` key or ``extra_argv`` flag that the plugin sets itself."""
    table = RESERVED + (SPECULATIVE_FLAGS if server.speculative is not None else ())
    # an engine_args key is read both ways: {c: 99} is llama-server's -c to whoever wrote it
    given = [(f"engine_args.{key}", engine_arg_flag(key)) for key in server.engine_args]
    given += [(f"engine_args.{key}", "-" + key) for key in server.engine_args if key[:1] != "-"]
    given += [(f"extra_argv {token!r}", token) for token in server.extra_argv]
    for where, token in given:
        found = reserved_as(token, table)
        if found is not None:
            flag, field = found
            raise UserFacingError(
                f"{where}: llama-server's {flag} is set from the config field {field}; "
                "set that instead (two values would reach the server, and the last one wins)"
            )
        if where.startswith("engine_args") and "=" in token and token.startswith("--"):
            raise UserFacingError(
                f"{where}: a key with '=' is not a llama-server flag; write "
                f"{{{token.split('=', 1)[0].lstrip('-')}: VALUE}}"
            )
