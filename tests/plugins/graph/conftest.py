from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_presets_graph
from agent_presets.testing import ContextValues, PresetsHost
from agent_presets_general import SpaceApp

OFF_PRESETS = ("graph-node-map-tools", "graph-state-tools")


class GraphApp(PresetsHost):
    """A headless host running only the graph plugin, in the graph context."""

    def __init__(self, directory: Path, *, enable_off: bool = True) -> None:
        super().__init__(
            # the other built-ins' activities, so a test can switch to one
            [SpaceApp(), agent_presets_graph, ContextValues(activity=["drawing"])],
            directory / "state",
            root=directory / "files",
            tool_prefix="space_graph_",
        )
        self.set_context(surface="canvas", activity="graph")
        if enable_off:
            self.enable(*OFF_PRESETS)

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.call_tool(tool, **arguments)

    def saved_rows(self, world: str = "home") -> dict[str, Any]:
        """The graph's rows as committed to the state database, read by a second connection."""
        return self.committed_rows("graph", world)

    def state(self) -> Any:
        """The graph's saved state."""
        return self.host.runtime("graph").to_state()

    def node(self, label: str, **data: Any) -> str:
        return str(self.call("add_node", label=label, data=data)["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Callable[..., GraphApp]]:
    """Build a graph app on this test's state directory (again: a restart)."""
    made: list[GraphApp] = []

    def make(*, enable_off: bool = True) -> GraphApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(GraphApp(tmp_path, enable_off=enable_off))
        return made[-1]

    yield make
    if made:
        made[-1].close()


@pytest.fixture
def app(make_app: Callable[..., GraphApp]) -> GraphApp:
    return make_app()
