from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_presets_drawing
from agent_presets.testing import ContextValues, PresetsHost
from agent_presets_drawing import Drawing
from agent_presets_general import SpaceApp

HISTORY_KEYS = ("undo_depth", "redo_depth", "next_undo", "next_redo")
OFF_PRESETS = ("drawing-layer-destructive-tools", "drawing-selection-destructive-tools")


class DrawingApp(PresetsHost):
    """A headless host running only the drawing plugin, in the drawing context."""

    def __init__(self, directory: Path, *, destructive: bool = True) -> None:
        super().__init__(
            # the other built-ins' activities, so a test can switch to one
            [SpaceApp(), agent_presets_drawing, ContextValues(activity=["graph"])],
            directory / "state",
            root=directory / "files",
            tool_prefix="space_drawing_",
        )
        self.set_context(surface="canvas", activity="drawing")
        if destructive:
            self.enable(*OFF_PRESETS)

    def call(self, tool: str, /, **arguments: Any) -> Any:
        return self.call_tool(tool, **arguments)

    def snapshot(self) -> dict[str, Any]:
        """The kit's snapshot and the drawing as inspect shows it, history counters included."""
        return {**super().snapshot(), "inspect": self.state()}

    def saved_rows(self, world: str = "home") -> dict[str, Any]:
        """The drawing's rows as committed to the state database, read by a second connection."""
        return self.committed_rows("drawing", world)

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
def app(tmp_path: Path) -> Iterator[DrawingApp]:
    app = DrawingApp(tmp_path)
    yield app
    app.close()


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Callable[..., DrawingApp]]:
    """Build a drawing app on this test's state directory (again: a restart)."""
    made: list[DrawingApp] = []

    def make(*, destructive: bool = True) -> DrawingApp:
        if made:
            made[-1].close()  # a restart: the previous host stops first
        made.append(DrawingApp(tmp_path, destructive=destructive))
        return made[-1]

    yield make
    if made:
        made[-1].close()


def _no_fsync(fd: int) -> None:
    """Stands in for ``os.fsync`` where a test checks history, not durability."""


@pytest.fixture(scope="module")
def shared_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DrawingApp]:
    """One app for a whole module, for property tests that start each example afresh.

    Its saves still write and rename every file, but skip ``fsync``. Every
    tool call that changes the drawing saves the world, and each save syncs
    the file and its directory: a history property run makes over 4,000
    fsyncs, whose latency is the disk's and grows with whatever else writes
    (the rest of the suite, other processes), so the run took 2 s alone and
    14 s in the full suite while checking nothing about durability. That is
    the crash tests' job, in writer processes this does not touch.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", _no_fsync)
        app = DrawingApp(tmp_path_factory.mktemp("drawing"))
        yield app
        app.close()
