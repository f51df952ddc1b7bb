"""agent-presets built-in plugin: general.

The app-wide tools of the spec's General table: theme, surface, activity and
canvas visibility, worlds, files under the host's file root, and bash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import PluginHooks, hookimpl
from agent_presets_general.bash import BashRunner
from agent_presets_general.files import FileRoot
from agent_presets_general.sandbox import ShellOptions, sandbox_status

if TYPE_CHECKING:
    from agent_presets.host import ServeOptions

__all__ = ["BashRunner", "FileRoot", "ShellOptions", "sandbox_status"]


# presets.yaml, .adapters, and the host's fields these presets use: the shell's two
# surfaces, and the activities (the plugins that have one add it; the prompt lists them).
_hooks = PluginHooks(
    __name__,
    context_fields=[
        {"name": "surface", "values": ["scene", "canvas"]},
        {"name": "activity", "values": []},
    ],
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters


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
