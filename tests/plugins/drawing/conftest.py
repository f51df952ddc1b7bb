from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pluginkit import PluginApp

import agent_presets_drawing
from agent_presets_drawing import Drawing

HISTORY_KEYS = ("undo_depth", "redo_depth", "next_undo", "next_redo")


class DrawingApp(PluginApp):
    """A headless host running only the drawing plugin, in the drawing context."""

    plugin = agent_presets_drawing
    runtime = "drawing"
    prefix = "space_drawing_"
    shell = (("set_surface", "canvas"), ("set_activity", "drawing"))
    off_presets = ("drawing-layer-destructive-tools", "drawing-selection-destructive-tools")

    def __init__(self, state_dir: Path, *, destructive: bool = True) -> None:
        self.state_dir = state_dir
        super().__init__(state_dir, enable_off=destructive)

    def state(self) -> Any:
        """The drawing as inspect shows it, history counters included."""
        return self.call("inspect")

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

    def saved_drawing(self, world: str = "home") -> Drawing:
        """The drawing as a new process would load it from the state database."""
        return Drawing({"format": 2, "rows": self.saved_rows(world)})

    def rect(self, x: float, y: float, w: float, h: float, **extra: Any) -> str:
        result = self.call("insert_shape", shape="rect", x=x, y=y, width=w, height=h, **extra)
        return str(result["id"])


@pytest.fixture
def app(tmp_path: Path) -> DrawingApp:
    return DrawingApp(tmp_path)


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., DrawingApp]:
    """Build a drawing app on this test's state directory (again: a restart)."""

    made: list[DrawingApp] = []

    def make(*, destructive: bool = True) -> DrawingApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(DrawingApp(tmp_path, destructive=destructive))
        return made[-1]

    return make


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> DrawingApp:
    """One app for a whole module, for property tests that start each example afresh."""
    return DrawingApp(tmp_path_factory.mktemp("drawing"))
