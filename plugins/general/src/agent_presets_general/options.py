"""The shell's ``presets serve`` flags: ``--shell-env``, ``--shell-network``, ``--unsafe-shell``.

The plugin that runs the shell owns its flags (hook ``presets_serve_options``);
their values build a ``ShellOptions``, which the host hands back to
``presets_headless_runtime`` typed.
"""

from __future__ import annotations

from typing import Any

import click

from agent_presets.host import ServeOptions
from agent_presets_general.sandbox import ENV_NAME, ShellOptions


def _env_names(ctx: click.Context, param: click.Parameter, names: tuple[str, ...]) -> Any:
    for name in names:
        if not ENV_NAME.match(name):
            raise click.BadParameter(
                f"{name!r} is not an environment variable name (letters, digits, '_')"
            )
    return names


def serve_options() -> ServeOptions[ShellOptions]:
    return ServeOptions(
        ShellOptions,
        [
            click.Option(
                ["--shell-env", "shell_env"],
                metavar="NAME",
                multiple=True,
                callback=_env_names,
                help="Pass this variable of the server's environment into the shell sandbox. "
                "Repeatable. [default: only PATH, HOME=the root, LANG]",
            ),
            click.Option(
                ["--shell-network"],
                is_flag=True,
                help="Let shell commands reach the network (off by default).",
            ),
            click.Option(
                ["--unsafe-shell"],
                is_flag=True,
                help="Where bubblewrap does not work, run shell commands unconfined instead of "
                "refusing to turn the shell preset on, and load code units unconfined (in a "
                "process of their own) instead of refusing to. Not needed (and not used) where the "
                "sandbox works.",
            ),
        ],
    )
