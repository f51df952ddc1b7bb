"""A state directory saved as JSON files by the previous version migrates on first start.

``tests/data/state-v1`` was written by that version (a drawing with undo and
redo steps, a scene with a terrain, a graph, a unit); ``state-v1-expected.json``
is what that version read back from it. The state database must give the same
answers, history included, move the old files aside, and clean temp files a
killed writer left behind.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import agent_presets_drawing
import agent_presets_graph
import agent_presets_scene
import agent_presets_units
from agent_presets_general import SpaceHost

DATA = Path(__file__).resolve().parents[1] / "data"
PLUGINS = [agent_presets_drawing, agent_presets_graph, agent_presets_scene, agent_presets_units]


def open_host(state: Path) -> SpaceHost:
    host = SpaceHost(state)
    host.start(PLUGINS)
    return host


def test_json_state_of_the_previous_version_migrates_once_with_its_history(
    tmp_path: Path,
) -> None:
    expected: dict[str, Any] = json.loads((DATA / "state-v1-expected.json").read_text())
    state = tmp_path / "state"
    shutil.copytree(DATA / "state-v1", state)
    debris = state / "worlds" / "home" / ".scene.json.abc123.tmp"
    debris.write_bytes(b"x" * 1000)

    with open_host(state) as host:
        assert host.partition_runtime("home", "drawing").inspect() == expected["drawing"]
        assert host.partition_runtime("home", "scene").to_state() == expected["scene"]
        assert host.partition_runtime("home", "graph").to_state() == expected["graph"]
    assert not debris.exists()
    world = state / "worlds" / "home"
    assert sorted(p.name for p in world.iterdir()) == [
        "drawing.json.migrated",
        "graph.json.migrated",
        "scene.json.migrated",
    ]

    with open_host(state) as host:  # read back from the database alone
        drawing = host.partition_runtime("home", "drawing")
        assert drawing.inspect() == expected["drawing"]
        drawing.redo()
        assert drawing.inspect() == expected["drawing_after_redo"]
        for _ in range(3):
            drawing.undo()
        assert drawing.inspect() == expected["drawing_after_three_undos"]
        assert host.partition_runtime("home", "scene").to_state() == expected["scene"]
        assert host.partition_runtime("home", "graph").to_state() == expected["graph"]
        assert host.runtime("units").inspect("greeter")["source"].startswith("def greet")
