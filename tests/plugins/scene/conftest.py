from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_presets_scene
from agent_presets import ToolCallError, ToolDef
from agent_presets.bootstrap import Presets
from agent_presets.host import HeadlessHost

OFF_PRESETS = ("scene-terrain-destructive-tools", "scene-state-tools")


class SceneApp:
    """A headless host running only the scene plugin, on the scene surface.

    ``call`` runs a tool as an MCP client would: looked up in the manager's
    current tool defs, so a tool the context does not offer cannot be called.
    """

    def __init__(self, directory: Path, *, enable_off: bool = True) -> None:
        self.host = HeadlessHost(directory / "state", root=directory / "files")
        self.presets: Presets = self.host.start(plugins=[agent_presets_scene])
        assert self.presets.problems == []
        self.host.shell.set_surface("scene")
        if enable_off:
            for name in OFF_PRESETS:
                self.presets.manager.set_override(name, "on")

    def tools(self) -> dict[str, ToolDef]:
        return {t.name: t for t in self.presets.manager.get_tool_defs()}

    def call(self, tool: str, /, **arguments: Any) -> Any:
        name = f"space_scene_{tool}"
        tools = self.tools()
        assert name in tools, f"{name} is not offered; offered: {sorted(tools)}"
        return tools[name].run(arguments)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.host.scene.to_state()
        return state

    def refused(self, tool: str, /, **arguments: Any) -> str:
        """Call a tool that must refuse; check it changed nothing; return its message."""
        before = self.state()
        with pytest.raises(ToolCallError) as info:
            self.call(tool, **arguments)
        assert self.state() == before, "a refused call changed the scene"
        return str(info.value)

    def cuboid(self, **extra: Any) -> str:
        result = self.call("add_cuboid", position=[0, 0.5, 0], size=[1, 1, 1], **extra)
        return str(result["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., SceneApp]:
    """Build a scene app on this test's state directory (again: a restart)."""

    def make(*, enable_off: bool = True) -> SceneApp:
        return SceneApp(tmp_path, enable_off=enable_off)

    return make


@pytest.fixture
def app(make_app: Callable[..., SceneApp]) -> SceneApp:
    return make_app()
