"""Units created through the tools survive the writer being killed mid-write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import agent_presets_units
from agent_presets_general import SpaceHost

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
    host = SpaceHost(harness.state)
    presets = host.start([agent_presets_units])
    assert harness.debris() == []
    units = presets.tool_registry.get("space_unit_list").run({})["units"]
    harness.check(len(units))
    inspect = presets.tool_registry.get("space_unit_inspect")
    for unit in units:
        assert inspect.run({"name": unit["name"]})["source"] == SOURCE


def test_temp_files_of_a_killed_writer_are_removed_at_start(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "units"
    folder.mkdir(parents=True)
    (folder / "kept.py").write_text("x = 1\n")
    (folder / ".kept.py.k2j3h4.tmp").write_bytes(b"half a unit")
    (tmp_path / "state" / ".shell.json.a1b2c3.tmp").write_bytes(b"{")
    with SpaceHost(tmp_path / "state") as host:
        host.start([agent_presets_units])
        assert host.runtime("units").names() == ["kept"]
    assert sorted(p.name for p in folder.iterdir()) == ["kept.py"]
    assert not list((tmp_path / "state").glob("*.tmp"))
