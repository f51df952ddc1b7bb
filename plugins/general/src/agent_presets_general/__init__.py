"""agent-presets built-in plugin: general.

The Space app itself (its context fields, defaults and shell: ``space``),
and the app-wide tools of the spec's General table that drive it: theme,
surface, activity and canvas visibility, worlds, files under the host's file
root, and bash. ``SpaceHost`` is the served host with the Space shell, for
code that starts one itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import PluginHooks, hookimpl
from agent_presets_general.bash import BashRunner
from agent_presets_general.files import FileRoot
from agent_presets_general.sandbox import ShellOptions, sandbox_status
from agent_presets_general.space import (
    SPACE_DEFAULTS,
    SPACE_FIELDS,
    SURFACES,
    THEMES,
    Shell,
    SpaceApp,
    install_shell,
)

if TYPE_CHECKING:
    from agent_presets.host import Host, ServeOptions
    from agent_presets_general.host import SpaceHost

__all__ = [
    "SPACE_DEFAULTS",
    "SPACE_FIELDS",
    "SURFACES",
    "THEMES",
    "BashRunner",
    "FileRoot",
    "Shell",
    "ShellOptions",
    "SpaceApp",
    "SpaceHost",
    "sandbox_status",
]


def __getattr__(name: str) -> Any:
    # The served host loads with the first use of this name, not with the plugin.
    if name == "SpaceHost":
        from agent_presets_general.host import SpaceHost

        return SpaceHost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# presets.yaml and .adapters; the context fields are the Space app's (the plugins that
# have an activity add it; the prompt lists them), and so are the host's defaults.
_hooks = PluginHooks(__name__)
_space = SpaceApp()
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _space.presets_context_fields
presets_host_defaults = _space.presets_host_defaults
presets_tool_adapters = _hooks.presets_tool_adapters


@hookimpl
def presets_serve_options() -> ServeOptions[ShellOptions]:
    from agent_presets_general.options import serve_options

    return serve_options()


@hookimpl
def presets_headless_runtime(host: Host) -> None:
    install_shell(host)  # the Space app's shell, keeping the host's context
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
