"""Files written through the general tools survive the writer being killed mid-write."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import agent_presets_general
from agent_presets_general import SpaceHost

CONTENT = "line\n" * 20_000  # about 100 KB, so a kill often lands inside a write


@pytest.mark.slow  # several writer processes, each killed mid-write
def test_killed_writer_leaves_every_acknowledged_file_whole(crash_harness: Callable) -> None:
    harness = crash_harness()
    harness.run(
        ["agent_presets_general"],
        tool="space_app_write_file",
        args={"path": "out/file-@I@.txt", "content": CONTENT},
        overrides={"general-file-write-tools": "on"},
    )
    host = SpaceHost(harness.state)
    presets = host.start([agent_presets_general], overrides={"general-file-read-tools": "on"})
    listing = presets.tool_registry.get("space_app_list_files").run({"path": "out"})
    files = [e for e in listing["entries"] if e["name"].endswith(".txt")]
    harness.check(len(files))
    read = presets.tool_registry.get("space_app_read_file")
    for entry in files:
        assert read.run({"path": f"out/{entry['name']}"})["content"] == CONTENT
