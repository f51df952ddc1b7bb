"""agent-presets built-in plugin: graph (nodes, edges, identities and the graph view)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

from agent_presets import ToolAdapter, hookimpl
from agent_presets_graph.model import Graph, GraphError

__all__ = ["Graph", "GraphError"]


@hookimpl
def presets_preset_files() -> Sequence[Traversable]:
    return [files(__name__) / "presets.yaml"]


@hookimpl
def presets_tool_adapters() -> Sequence[ToolAdapter]:
    # Imported here: the adapters (and their schema checks) are built when asked for.
    from agent_presets_graph.adapters import tool_adapters

    return tool_adapters()


@hookimpl
def presets_headless_runtime(host: Any) -> None:
    host.add_table_runtime("graph", Graph.from_table, migrate=Graph.migrate)
