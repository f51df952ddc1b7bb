"""The plugin kit: what the core exports so a plugin need not copy it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import agent_presets
from agent_presets.atomicfile import write_atomic
from agent_presets.host.statedb import StateStore

RUNTIME_MODULES = [
    "agent_presets_drawing.document",
    "agent_presets_graph.model",
    "agent_presets_scene.model",
]


def test_the_row_table_protocol_is_public_and_the_host_table_satisfies_it(
    tmp_path: Path,
) -> None:
    store = StateStore(tmp_path / "state.db")
    try:
        assert isinstance(store.table("notes", "home"), agent_presets.RowTable)
    finally:
        store.close()
    assert not isinstance({}, agent_presets.RowTable)


@pytest.mark.parametrize("module", RUNTIME_MODULES)
def test_the_built_in_runtimes_type_their_table_with_the_core_protocol(module: str) -> None:
    assert importlib.import_module(module).RowTable is agent_presets.RowTable


def test_the_atomic_writer_is_public(tmp_path: Path) -> None:
    assert agent_presets.write_atomic is write_atomic
    target = tmp_path / "a" / "b.txt"
    agent_presets.write_atomic(target, b"hello", mode=0o600)
    assert target.read_bytes() == b"hello"
    assert target.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["b.txt"]  # no temp file left
