"""agent-presets built-in plugin: graph (nodes, edges, identities and the graph view)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import ContentProvider, PluginHooks, hookimpl, require_runtime
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
def presets_content_providers() -> list[ContentProvider]:
    # graph://node/{node_id}: one resource per node, read and completed from the graph.
    return [ContentProvider("graph.node", read=_node, complete=_node_ids)]


def _graph_of(app: Any) -> Graph:
    graph: Graph = require_runtime(app, "graph", "the resource graph://node/{node_id}")
    return graph


def _node(app: Any, variables: Any) -> str:
    import json

    return json.dumps(_graph_of(app).neighbourhood(variables["node_id"]), ensure_ascii=False)


def _node_ids(app: Any, _argument: str, _value: str, _arguments: Any) -> list[str]:
    # Every id, in the graph's order; the server keeps those that start like the value.
    return list(_graph_of(app).nodes)


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("graph", _graph, migrate=_migrate)


def _graph(table: Any) -> Graph:
    from agent_presets_graph.model import Graph

    return Graph.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_graph.model import Graph

    Graph.migrate(saved, table)
