from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_presets_graph
from agent_presets import ToolCallError, ToolDef
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost

OFF_PRESETS = ("graph-node-map-tools", "graph-state-tools")


class GraphApp:
    """A headless host running only the graph plugin, in the graph context.

    ``call`` runs a tool as an MCP client would: looked up in the manager's
    current tool defs, so a tool the context does not offer cannot be called.
    """

    def __init__(self, directory: Path, *, enable_off: bool = True) -> None:
        self.host = HeadlessHost(directory / "state", root=directory / "files")
        self.presets: Presets = self.host.start(plugins=[agent_presets_graph])
        assert self.presets.problems == []
        self.host.shell.set_surface("canvas")
        self.host.shell.set_activity("graph")
        if enable_off:
            for name in OFF_PRESETS:
                self.presets.manager.set_override(name, "on")

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.presets.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        name = f"space_graph_{tool}"
        tools = self.tools()
        assert name in tools, f"{name} is not offered; offered: {sorted(tools)}"
        return tools[name].run(arguments)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.host.graph.to_state()
        return state

    def refused(self, tool: str, /, **arguments: Any) -> str:
        """Call a tool that must refuse; check it changed nothing; return its message."""
        before = self.state()
        with pytest.raises(ToolCallError) as info:
            self.call(tool, **arguments)
        assert self.state() == before, "a refused call changed the graph"
        return str(info.value)

    def node(self, label: str, **data: Any) -> str:
        return str(self.call("add_node", label=label, data=data)["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., GraphApp]:
    """Build a graph app on this test's state directory (again: a restart)."""

    def make(*, enable_off: bool = True) -> GraphApp:
        return GraphApp(tmp_path, enable_off=enable_off)

    return make


@pytest.fixture
def app(make_app: Callable[..., GraphApp]) -> GraphApp:
    return make_app()
