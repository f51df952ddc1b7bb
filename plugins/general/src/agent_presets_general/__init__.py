"""agent-presets built-in plugin: general.

The app-wide tools of the spec's General table: theme, surface, activity and
canvas visibility, worlds, files under the host's file root, and bash.
"""

from __future__ import annotations

from typing import Any

from agent_presets import PluginHooks, hookimpl
from agent_presets_general.bash import BashRunner
from agent_presets_general.files import FileRoot
from agent_presets_general.sandbox import ShellOptions, sandbox_status

__all__ = ["BashRunner", "FileRoot", "ShellOptions", "sandbox_status"]


# presets.yaml, .adapters, and the parts of the Space vocabulary these presets rely on
# (so they work in any host).
_hooks = PluginHooks(
    __name__,
    context_fields=[
        {
            "name": "surface",
            "type": "string",
            "values": ["scene", "canvas"],
            "description": "The surface the user is on; the shell tools switch between them.",
        },
        {
            "name": "activity",
            "type": "string",
            "values": [],
            "description": ("What the user is doing; the plugins that use an activity declare it."),
        },
        {
            "name": "canvas_visible",
            "type": "boolean",
            "description": "Whether the canvas is shown.",
        },
    ],
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.attach("files", FileRoot(host.root))
    # The operator's shell flags, as plain data so the host needs no import of
    # this plugin: {"shell_env": [...], "shell_network": bool, "unsafe_shell": bool}.
    shell = ShellOptions.from_mapping(getattr(host, "shell_options", None))
    host.attach(
        "bash",
        BashRunner(
            host.root,
            shell_env=shell.shell_env,
            shell_network=shell.shell_network,
            unsafe_shell=shell.unsafe_shell,
        ),
    )
