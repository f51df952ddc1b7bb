from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_presets_scene
from agent_presets.testing import ContextValues, PresetsHost
from agent_presets_general import SpaceApp

OFF_PRESETS = ("scene-terrain-destructive-tools", "scene-state-tools")


class SceneApp(PresetsHost):
    """A headless host running only the scene plugin, on the scene surface."""

    def __init__(self, directory: Path, *, enable_off: bool = True) -> None:
        super().__init__(
            # the other built-ins' activities, so a test can switch to one
            [SpaceApp(), agent_presets_scene, ContextValues(activity=["drawing", "graph"])],
            directory / "state",
            root=directory / "files",
            tool_prefix="space_scene_",
        )
        self.set_context(surface="scene")
        if enable_off:
            self.enable(*OFF_PRESETS)

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.call_tool(tool, **arguments)

    def saved_rows(self, world: str = "home") -> dict[str, Any]:
        """The scene's rows as committed to the state database, read by a second connection."""
        return self.committed_rows("scene", world)

    def state(self) -> Any:
        """The scene's saved state."""
        return self.host.runtime("scene").to_state()

    def cuboid(self, **extra: Any) -> str:
        result = self.call("add_cuboid", position=[0, 0.5, 0], size=[1, 1, 1], **extra)
        return str(result["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Callable[..., SceneApp]]:
    """Build a scene app on this test's state directory (again: a restart)."""
    made: list[SceneApp] = []

    def make(*, enable_off: bool = True) -> SceneApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(SceneApp(tmp_path, enable_off=enable_off))
        return made[-1]

    yield make
    if made:
        made[-1].close()


@pytest.fixture
def app(make_app: Callable[..., SceneApp]) -> SceneApp:
    return make_app()
