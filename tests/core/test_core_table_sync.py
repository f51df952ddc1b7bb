"""``TableSync``: a runtime's operations on rows that other writers may change.

The embedded table has one writer, so there a runtime loads once and never
reloads; a table that reports conflicts gets its operation run again on fresh
rows, a bounded number of times, then a refusal the model can read.
(``tests/e2e/test_e2e_redis_tables.py`` runs the same against a real Redis.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_presets import RowConflict, RowTable
from agent_presets.host import Table
from agent_presets_drawing.document import Drawing
from agent_presets_general import SpaceHost
from agent_presets_graph.model import Graph, GraphError


class CountedTable(Table):
    """The host's embedded table, counting the snapshots its runtime takes."""

    snapshots = 0

    def snapshot(self) -> list[tuple[str, Any]]:
        self.snapshots += 1
        return super().snapshot()


def test_a_runtime_on_the_embedded_table_loads_once_and_never_reloads(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    try:
        table = CountedTable(host.store, "drawing", "home")  # type: ignore[arg-type]
        assert isinstance(table, RowTable)
        drawing = Drawing.from_table(table)
        for i in range(5):
            drawing.insert_shape("rect", i, i, 5, 5)
        drawing.undo()
        assert table.snapshots == 1 and not table.stale()
        assert len(Drawing.from_table(table).inspect()["layers"][0]["objects"]) == 4
    finally:
        host.close()


class ConflictingTable:
    """A table in memory whose next ``conflicts`` commits lose the race (another writer won)."""

    def __init__(self, conflicts: int) -> None:
        self.rows: dict[str, Any] = {}
        self.conflicts = conflicts
        self.snapshots = 0
        self._pending: dict[str, Any] | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.rows.get(key, default)

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        return sorted((k, v) for k, v in self.rows.items() if k.startswith(prefix))

    def keys(self, prefix: str = "") -> list[str]:
        return [k for k, _ in self.items(prefix)]

    def put(self, key: str, value: Any) -> None:
        with self.transaction():
            assert self._pending is not None
            self._pending[key] = value

    def delete(self, key: str) -> None:
        with self.transaction():
            assert self._pending is not None
            self._pending[key] = None

    def clear(self) -> None:
        self.rows.clear()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        outer = self._pending is None
        if outer:
            self._pending = {}
        try:
            yield
            if outer:
                if self.conflicts:
                    self.conflicts -= 1
                    raise RowConflict("another writer committed first")
                for key, value in self._pending.items():
                    if value is None:
                        self.rows.pop(key, None)
                    else:
                        self.rows[key] = value
        finally:
            if outer:
                self._pending = None

    def snapshot(self) -> list[tuple[str, Any]]:
        self.snapshots += 1
        return self.items()

    def stale(self) -> bool:
        return False


def test_a_change_that_loses_the_race_runs_again_on_fresh_rows() -> None:
    table = ConflictingTable(conflicts=3)
    graph = Graph.from_table(table)
    node = graph.add_node("kept")
    assert table.snapshots == 1 + 3  # the first load, then one per lost race
    assert [n["id"] for n in graph.to_state()["nodes"]] == [node.id] == ["n1"]
    assert table.get(f"node/{node.id}")["node"]["label"] == "kept"


def test_a_change_that_keeps_losing_is_refused_in_words_and_saves_nothing() -> None:
    table = ConflictingTable(conflicts=1000)
    graph = Graph.from_table(table)
    graph.table_sync.attempts = 4
    with pytest.raises(GraphError, match="other writers changed this state 4 times"):
        graph.add_node("lost")
    assert table.rows == {}
    table.conflicts = 0
    assert graph.to_state()["nodes"] == []  # memory was reloaded: the lost node is not there
