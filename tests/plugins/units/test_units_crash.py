"""Units created through the tools survive the writer being killed mid-write."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agent_presets_units
from agent_presets.host import HeadlessHost

SOURCE = "def answer():\n    return 42\n" * 2000


@pytest.mark.slow  # several writer processes, each killed mid-write
def test_killed_writer_leaves_every_acknowledged_unit_whole(crash_harness: Callable) -> None:
    harness = crash_harness()
    harness.run(
        ["agent_presets_units"],
        tool="space_unit_create",
        args={"name": "unit_@I@", "source": SOURCE},
        overrides={"units-edit-tools": "on"},
    )
    host = HeadlessHost(harness.state)
    presets = host.start([agent_presets_units])
    units = presets.tool_registry.get("space_unit_list").run({})["units"]
    harness.check(len(units))
    inspect = presets.tool_registry.get("space_unit_inspect")
    for unit in units:
        assert inspect.run({"name": unit["name"]})["source"] == SOURCE
