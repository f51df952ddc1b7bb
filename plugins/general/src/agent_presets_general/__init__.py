"""agent-presets built-in plugin: general.

The app-wide tools of the spec's General table: theme, surface, activity and
canvas visibility, worlds, files under the host's file root, and bash.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from agent_presets import ToolAdapter, hookimpl
from agent_presets_general.bash import BashRunner
from agent_presets_general.files import FileRoot
from agent_presets_general.sandbox import ShellOptions, sandbox_status

if TYPE_CHECKING:
    from agent_presets.host import ServeOptions

__all__ = ["BashRunner", "FileRoot", "ShellOptions", "sandbox_status"]


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    # Not `from importlib.resources import files`: the submodule `files` would shadow it.
    return [resources.files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The host's fields these presets use: the shell's two surfaces, and the activities
    # (the plugins that have one add it; the prompt lists them).
    return [{"name": "surface", "values": ["scene", "canvas"]}, {"name": "activity", "values": []}]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_general.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_serve_options() -> ServeOptions[ShellOptions]:
    from agent_presets_general.options import serve_options

    return serve_options()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.attach("files", FileRoot(host.root))
    shell = host.serve_options(ShellOptions)  # the serve flags above, parsed
    host.attach(
        "bash",
        BashRunner(
            host.root,
            shell_env=shell.shell_env,
            shell_network=shell.shell_network,
            unsafe_shell=shell.unsafe_shell,
        ),
    )
