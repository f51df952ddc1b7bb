"""A graph survives its writer being killed mid-write, losing nothing acknowledged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agent_presets_graph
from agent_presets_general import SpaceHost


@pytest.mark.slow  # several writer processes, each killed mid-write
def test_killed_writer_leaves_every_acknowledged_node(crash_harness: Callable) -> None:
    harness = crash_harness()
    harness.run(
        ["agent_presets_graph"],
        tool="space_graph_add_node",
        args={"label": "node @I@", "data": {"note": "written before the kill"}},
        shell=[["set_surface", "canvas"], ["set_activity", "graph"]],
    )
    host = SpaceHost(harness.state)
    presets = host.start([agent_presets_graph], overrides={"graph-state-tools": "on"})
    assert harness.debris() == []
    state = presets.tool_registry.get("space_graph_get_state").run({})
    harness.check(len(state["nodes"]))
    assert all(n["data"] == {"note": "written before the kill"} for n in state["nodes"])
