"""agent-presets built-in plugin: drawing.

Presets for vector drawing on the canvas, the tools behind them, and a
reference drawing runtime (one per world) for the headless host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import ContentProvider, PluginHooks, hookimpl, require_runtime
from agent_presets_drawing.terms import DrawingError

if TYPE_CHECKING:
    from agent_presets_drawing.document import Drawing

__all__ = ["Drawing", "DrawingError"]

# The values these presets add to the host's fields; one drawing per world, loaded when used.
_hooks = PluginHooks(
    __name__,
    context_fields=[
        {"name": "surface", "values": ["canvas"]},
        {"name": "activity", "values": ["drawing"]},
    ],
    runtimes={"drawing": ".document:Drawing"},
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters
presets_headless_runtime = _hooks.presets_headless_runtime
__getattr__ = _hooks.module_getattr


@hookimpl
def presets_content_providers() -> list[ContentProvider]:
    # drawing://current.svg, read from the drawing when a client reads it.
    return [ContentProvider("drawing.svg", read=_svg)]


def _svg(app: Any, _variables: Any) -> str:
    drawing: Drawing = require_runtime(app, "drawing", "the resource drawing://current.svg")
    return drawing.to_svg()
