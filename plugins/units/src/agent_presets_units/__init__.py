"""agent-presets built-in plugin: units.

Code units are Python files in the host's state folder that the agent can list,
inspect, create, edit, patch and (re)load. Inspecting is safe and on by
default; changing and loading units are off until a user turns them on.
Loading runs a unit in a sandboxed process of its own, never in the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from agent_presets import ContentProvider, ToolAdapter, hookimpl, require_runtime
from agent_presets_general import ShellOptions
from agent_presets_units.units import UnitFolder

__all__ = ["UnitFolder"]


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [resources.files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The unit tools work on any surface: they use the host's field and add no value.
    return [{"name": "surface", "values": []}]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_units.adapters import tool_adapters

    return tool_adapters()


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
