"""A scene survives its writer being killed mid-write, losing nothing acknowledged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agent_presets_scene
from agent_presets_general import SpaceHost


@pytest.mark.slow  # several writer processes, each killed mid-write
def test_killed_writer_leaves_every_acknowledged_cuboid(crash_harness: Callable) -> None:
    harness = crash_harness()
    harness.run(
        ["agent_presets_scene"],
        tool="space_scene_add_cuboid",
        args={"position": [1, 2, 3], "size": [1, 1, 1], "name": "box @I@"},
        shell=[["set_surface", "scene"]],
    )
    host = SpaceHost(harness.state)
    presets = host.start([agent_presets_scene], overrides={"scene-state-tools": "on"})
    assert harness.debris() == []
    state = presets.tool_registry.get("space_scene_get_state").run({})
    harness.check(len(state["objects"]))
    assert all(o["position"] == [1.0, 2.0, 3.0] for o in state["objects"])
