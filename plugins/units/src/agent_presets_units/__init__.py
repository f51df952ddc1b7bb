"""agent-presets built-in plugin: units.

Code units are Python files in the host's state folder that the agent can list,
inspect, create, edit, patch and (re)load. Inspecting is safe and on by
default; changing and loading units are off until a user turns them on.
Loading runs a unit in a sandboxed process of its own, never in the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_presets import ContentProvider, PluginHooks, hookimpl, require_runtime
from agent_presets_general import ShellOptions
from agent_presets_units.units import UnitFolder

__all__ = ["UnitFolder"]

# The unit tools work on any surface: they use the host's field and add no value.
_hooks = PluginHooks(__name__, context_fields=[{"name": "surface", "values": []}])
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters


@hookimpl
def presets_content_providers() -> Sequence[ContentProvider]:
    # The review prompt's unit argument completes with the units in the folder.
    return [ContentProvider("units.review", complete=_complete_unit)]


def _complete_unit(app: Any, argument: str, _value: str, _arguments: Any) -> list[str]:
    if argument != "unit":
        return []
    units: UnitFolder = require_runtime(app, "units", "the units review prompt")
    return units.names()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    # A unit loads like a shell command runs: in the sandbox, writing only the
    # file root; the general plugin's --unsafe-shell (read back typed, as that
    # plugin reads it) lets it load unconfined where the sandbox does not work.
    unsafe = host.serve_options(ShellOptions).unsafe_shell
    host.attach("units", UnitFolder(host.state_dir / "units", root=host.root, unsafe=unsafe))
