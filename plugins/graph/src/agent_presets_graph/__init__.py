"""agent-presets built-in plugin: graph (nodes, edges, identities and the graph view)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import PluginHooks, hookimpl
from agent_presets_graph.terms import GraphError

if TYPE_CHECKING:
    from agent_presets_graph.model import Graph

__all__ = ["Graph", "GraphError"]


def __getattr__(name: str) -> Any:
    # The graph runtime loads when first used (a call, or this name), not with the plugin.
    if name == "Graph":
        from agent_presets_graph.model import Graph

        return Graph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# presets.yaml, .adapters, and the values these presets add to the host's fields
# (surface and activity are the host's).
_hooks = PluginHooks(
    __name__,
    context_fields=[
        {"name": "surface", "values": ["canvas"]},
        {"name": "activity", "values": ["graph"]},
    ],
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("graph", _graph, migrate=_migrate)


def _graph(table: Any) -> Graph:
    from agent_presets_graph.model import Graph

    return Graph.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_graph.model import Graph

    Graph.migrate(saved, table)
