"""agent-presets built-in plugin: graph (nodes, edges, identities and the graph view)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import ContentProvider, PluginHooks, hookimpl, require_runtime
from agent_presets_graph.terms import GraphError

if TYPE_CHECKING:
    from agent_presets_graph.model import Graph

__all__ = ["Graph", "GraphError"]

# The values these presets add to the host's fields; one graph per world, loaded when used.
_hooks = PluginHooks(
    __name__,
    context_fields=[
        {"name": "surface", "values": ["canvas"]},
        {"name": "activity", "values": ["graph"]},
    ],
    runtimes={"graph": ".model:Graph"},
)
presets_preset_files = _hooks.presets_preset_files
presets_context_fields = _hooks.presets_context_fields
presets_tool_adapters = _hooks.presets_tool_adapters
presets_headless_runtime = _hooks.presets_headless_runtime
__getattr__ = _hooks.module_getattr


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
