"""agent-presets built-in plugin: drawing.

Presets for vector drawing on the canvas, the tools behind them, and a
reference drawing runtime (one per world) for the headless host.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from agent_presets import ToolAdapter, hookimpl
from agent_presets_drawing.terms import DrawingError

if TYPE_CHECKING:
    from agent_presets_drawing.document import Drawing

__all__ = ["Drawing", "DrawingError"]


def __getattr__(name: str) -> Any:
    # The drawing runtime loads when first used (a call, or this name), not with the plugin.
    if name == "Drawing":
        from agent_presets_drawing.document import Drawing

        return Drawing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The values these presets add to the host's fields (surface and activity are the host's).
    return [
        {"name": "surface", "values": ["canvas"]},
        {"name": "activity", "values": ["drawing"]},
    ]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_drawing.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("drawing", _drawing, migrate=_migrate)


def _drawing(table: Any) -> Drawing:
    from agent_presets_drawing.document import Drawing

    return Drawing.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_drawing.document import Drawing

    Drawing.migrate(saved, table)
