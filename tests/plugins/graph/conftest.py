from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pluginkit import PluginApp

import agent_presets_graph


class GraphApp(PluginApp):
    """A headless host running only the graph plugin, in the graph context."""

    plugin = agent_presets_graph
    runtime = "graph"
    prefix = "space_graph_"
    shell = (("set_surface", "canvas"), ("set_activity", "graph"))
    off_presets = ("graph-node-map-tools", "graph-state-tools")

    def node(self, label: str, **data: Any) -> str:
        return str(self.call("add_node", label=label, data=data)["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., GraphApp]:
    """Build a graph app on this test's state directory (again: a restart)."""

    made: list[GraphApp] = []

    def make(*, enable_off: bool = True) -> GraphApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(GraphApp(tmp_path, enable_off=enable_off))
        return made[-1]

    return make


@pytest.fixture
def app(make_app: Callable[..., GraphApp]) -> GraphApp:
    return make_app()
