"""The ``presets`` command line: the ``main`` group and its commands.

Domain errors are raised in the core and turned into one clear line here
(``PresetsGroup``); no traceback reaches a user for a bad file or bad
arguments. Exit codes: 0 ok, 1 problems found (invalid input), 2 usage error.

The commands live by job: ``validate``, ``inspect`` (list, show, tools,
plugins, schema, resolve, explain), ``budget`` and ``serve`` (serve, opencode), with the
flags and helpers they share in ``options``. A command's module is imported
when that command is looked up, so ``presets serve`` never imports the
inspection commands (nor what they import) and ``presets validate`` never
imports the server's.
"""

from __future__ import annotations

import os
import sys
from importlib import import_module
from typing import Any, Final

import click

from agent_presets import _startup
from agent_presets._version import __version__
from agent_presets.lib.model import PresetError

__all__ = ["COMMANDS", "PresetsGroup", "main"]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

COMMANDS: Final = {
    "validate": "validate:validate",
    "list": "inspect:list_presets",
    "show": "inspect:show",
    "tools": "inspect:tools",
    "plugins": "inspect:plugins",
    "schema": "inspect:schema",
    "resolve": "inspect:resolve",
    "explain": "inspect:explain",
    "opencode": "serve:opencode",
    "serve": "serve:serve",
    "on": "control:turn_on",
    "off": "control:turn_off",
    "auto": "control:turn_auto",
    "status": "control:status",
    "requests": "control:requests",
    "approve": "control:approve",
    "deny": "control:deny",
    "context": "control:context",
    "new-plugin": "newplugin:new_plugin",
    "tokens": "tokens:tokens",
    "stats": "stats:stats",
    "budget": "budget:budget",
    "events": "stats:events",
    "upstreams": "upstreams:upstreams",
    "doctor": "doctor:doctor",
}
"""Each command's name and where it lives (``module:attribute`` under ``agent_presets.cli``)."""


class PresetsGroup(click.Group):
    """Maps domain errors to one-line click errors (exit 1); loads each command on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].partition(":")
            command = getattr(import_module(f"agent_presets.cli.{module}"), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # Click suggests from the loaded commands only: suggest from all of them.
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PresetError as exc:
            raise click.ClickException(str(exc)) from None
        except BrokenPipeError:
            # The reader went away (`presets list | head`): stop quietly, as cat does.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            sys.exit(1)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from None


@click.group(cls=PresetsGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="presets")
def main() -> None:
    """Decide which tools an AI agent may use right now, and serve them over MCP.

    Presets are YAML bundles of tool ids with the contexts that activate them,
    shipped by plugins (distributions with an `agent_presets` entry point).

    \b
    Examples:
      presets validate                      check every installed plugin
      presets validate plugins/my/presets.yaml --format github
      presets resolve --set KEY=VALUE       each field the plugins declare has a flag too
      presets explain TOOL                  why a tool is on or off, and what turns it on
      presets budget --json
      presets serve --transport http --port 8765

    \b
    Environment:
      PRESETS_LOAD_PLUGINS  comma list of plugins to load (empty: none; unset: all)
      PRESETS_PLUGINS_DIR   a folder of one-off plugins (*.py) and presets (*.yaml)
      PRESETS_STRICT=1      plugin and definition problems are fatal
      PRESETS_TRACE_PLUGINS=1  one line per hook call on stderr
    """
    # The executable paused the garbage collector for start-up (agent_presets._startup):
    # a command whose start-up is long (serve: plugins, host, SDK) resumes it itself once
    # it serves; every other command's start-up ends here.
    ctx = click.get_current_context()
    group = ctx.command
    chosen = ctx.invoked_subcommand
    command = group.get_command(ctx, chosen) if isinstance(group, click.Group) and chosen else None
    if not getattr(command, "resumes_collector", False):
        _startup.resume()
