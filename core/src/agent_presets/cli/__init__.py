"""The ``presets`` command line: the ``main`` group and its commands.

Domain errors are raised in the core and turned into one clear line here
(``PresetsGroup``); no traceback reaches a user for a bad file or bad
arguments. Exit codes: 0 ok, 1 problems found (invalid input), 2 usage error.

The commands live by job: ``validate``, ``inspect`` (list, show, tools,
plugins, schema, resolve, explain) and ``serve`` (serve, opencode), with the
flags and helpers they share in ``options``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from agent_presets import __version__
from agent_presets.cli.control import COMMANDS as CONTROL_COMMANDS
from agent_presets.cli.inspect import explain, list_presets, plugins, resolve, schema, show, tools
from agent_presets.cli.serve import opencode, serve
from agent_presets.cli.stats import stats
from agent_presets.cli.validate import validate
from agent_presets.model import PresetError

__all__ = ["PresetsGroup", "main"]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class PresetsGroup(click.Group):
    """Maps domain errors to one-line click errors (exit 1)."""

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
      presets resolve --surface canvas --activity drawing
      presets explain space_app_run_bash
      presets serve --transport http --port 8765

    \b
    Environment:
      PRESETS_LOAD_PLUGINS  comma list of plugins to load (empty: none; unset: all)
      PRESETS_PLUGINS_DIR   a folder of one-off plugins (*.py) and presets (*.yaml)
      PRESETS_STRICT=1      plugin and definition problems are fatal
      PRESETS_TRACE_PLUGINS=1  one line per hook call on stderr
    """


for _command in (
    validate,
    list_presets,
    show,
    tools,
    plugins,
    schema,
    resolve,
    explain,
    opencode,
    serve,
    stats,
    *CONTROL_COMMANDS,
):
    main.add_command(_command)
