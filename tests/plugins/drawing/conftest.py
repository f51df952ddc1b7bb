from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_presets_drawing
from agent_presets import ToolCallError, ToolDef
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost

DESTRUCTIVE = ("drawing-layer-destructive-tools", "drawing-selection-destructive-tools")
HISTORY_KEYS = ("undo_depth", "redo_depth", "next_undo", "next_redo")


class DrawingApp:
    """A headless host running only the drawing plugin, in the drawing context.

    ``call`` runs a tool as an MCP client would: looked up in the manager's
    current tool defs, so a tool the context does not offer cannot be called.
    """

    def __init__(self, state_dir: Path, *, destructive: bool = True) -> None:
        self.state_dir = state_dir
        self.host = HeadlessHost(state_dir / "state", root=state_dir / "files")
        self.presets: Presets = self.host.start(plugins=[agent_presets_drawing])
        assert self.presets.problems == []
        self.host.shell.set_surface("canvas")
        self.host.shell.set_activity("drawing")
        if destructive:
            for name in DESTRUCTIVE:
                self.presets.manager.set_override(name, "on")

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.presets.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        name = tool if tool.startswith("space_") else f"space_drawing_{tool}"
        tools = self.tools()
        assert name in tools, f"{name} is not offered; offered: {sorted(tools)}"
        return tools[name].run(arguments)

    def refused(self, tool: str, /, **arguments: Any) -> str:
        """Call a tool that must refuse; check it changed nothing; return its message."""
        before = self.call("inspect")
        with pytest.raises(ToolCallError) as info:
            self.call(tool, **arguments)
        assert self.call("inspect") == before, "a refused call changed the drawing"
        return str(info.value)

    def document(self) -> dict[str, Any]:
        """The drawing as inspect shows it, without the history counters."""
        doc = self.call("inspect")
        for key in HISTORY_KEYS:
            doc.pop(key)
        return doc

    def objects(self) -> dict[str, dict[str, Any]]:
        return {
            obj["id"]: obj for layer in self.call("inspect")["layers"] for obj in layer["objects"]
        }

    def rect(self, x: float, y: float, w: float, h: float, **extra: Any) -> str:
        result = self.call("insert_shape", shape="rect", x=x, y=y, width=w, height=h, **extra)
        return str(result["id"])


@pytest.fixture
def app(tmp_path: Path) -> DrawingApp:
    return DrawingApp(tmp_path)


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., DrawingApp]:
    """Build a drawing app on this test's state directory (again: a restart)."""

    def make(*, destructive: bool = True) -> DrawingApp:
        return DrawingApp(tmp_path, destructive=destructive)

    return make


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> DrawingApp:
    """One app for a whole module, for property tests that start each example afresh."""
    return DrawingApp(tmp_path_factory.mktemp("drawing"))
