"""agent-presets built-in plugin: graph (nodes, edges, identities and the graph view)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING, Any

from agent_presets import ToolAdapter, hookimpl
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


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_context_fields() -> Sequence[dict[str, Any]]:
    # The values these presets add to the host's fields (surface and activity are the host's).
    return [
        {"name": "surface", "values": ["canvas"]},
        {"name": "activity", "values": ["graph"]},
    ]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_graph.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("graph", _graph, migrate=_migrate)


def _graph(table: Any) -> Graph:
    from agent_presets_graph.model import Graph

    return Graph.from_table(table)


def _migrate(saved: Any, table: Any) -> None:
    from agent_presets_graph.model import Graph

    Graph.migrate(saved, table)
