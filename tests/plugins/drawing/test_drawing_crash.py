"""A drawing survives its writer being killed mid-write, losing nothing acknowledged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agent_presets_drawing
from agent_presets_general import SpaceHost


@pytest.mark.slow  # several writer processes, each killed mid-write
def test_killed_writer_leaves_every_acknowledged_shape(crash_harness: Callable) -> None:
    harness = crash_harness()
    harness.run(
        ["agent_presets_drawing"],
        tool="space_drawing_insert_shape",
        args={"shape": "rect", "x": 0, "y": 0, "width": 4, "height": 3},
        shell=[["set_surface", "canvas"], ["set_activity", "drawing"]],
    )
    host = SpaceHost(harness.state)
    presets = host.start([agent_presets_drawing])
    assert harness.debris() == []
    document = presets.tool_registry.get("space_drawing_inspect").run({})
    objects = [o for layer in document["layers"] for o in layer["objects"]]
    harness.check(len(objects))
    assert len({o["id"] for o in objects}) == len(objects)
