from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pluginkit import PluginApp

import agent_presets_scene


class SceneApp(PluginApp):
    """A headless host running only the scene plugin, on the scene surface."""

    plugin = agent_presets_scene
    runtime = "scene"
    prefix = "space_scene_"
    shell = (("set_surface", "scene"),)
    off_presets = ("scene-terrain-destructive-tools", "scene-state-tools")

    def cuboid(self, **extra: Any) -> str:
        result = self.call("add_cuboid", position=[0, 0.5, 0], size=[1, 1, 1], **extra)
        return str(result["id"])


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., SceneApp]:
    """Build a scene app on this test's state directory (again: a restart)."""

    made: list[SceneApp] = []

    def make(*, enable_off: bool = True) -> SceneApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(SceneApp(tmp_path, enable_off=enable_off))
        return made[-1]

    return make


@pytest.fixture
def app(make_app: Callable[..., SceneApp]) -> SceneApp:
    return make_app()
