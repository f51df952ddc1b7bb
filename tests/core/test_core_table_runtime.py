"""``TableRuntime``: the frame a runtime kept as rows gets from the core, once.

A subclass says its own state (attributes), how rows read into it and what
each row holds; the frame loads, saves, reloads after another writer,
restores and migrates, changing nothing when a state is refused. (The graph
and scene runtimes are built on it; their own tests cover them.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from core.test_core_table_sync import ConflictingTable

from agent_presets import TableRuntime, synced


class Refused(Exception):
    """The tally's refusal: nothing changed."""


class Tally(TableRuntime):
    """Named counts, a row each (``count/<name>``), with a whole state ``{"counts": {...}}``."""

    error = Refused
    counts: Mapping[str, int] = {}  # a class default: what a tally without rows holds

    def read_rows(self, rows: dict[str, Any]) -> None:
        self.counts = {k.removeprefix("count/"): v for k, v in rows.items()}

    def row(self, key: str) -> Any:
        return self.counts.get(key.removeprefix("count/"))

    def load_state(self, state: Mapping[str, Any]) -> None:
        counts = state.get("counts")
        if not isinstance(counts, dict) or not all(isinstance(v, int) for v in counts.values()):
            raise Refused("a tally state is {'counts': {name: integer}}")
        self.counts = dict(counts)

    def row_keys(self) -> list[str]:
        return [f"count/{name}" for name in self.counts]

    @synced
    def add(self, name: str) -> int:
        self.counts = {**self.counts, name: self.counts.get(name, 0) + 1}
        self.save(f"count/{name}")
        return self.counts[name]

    @synced
    def drop(self, name: str) -> None:
        self.counts = {k: v for k, v in self.counts.items() if k != name}
        self.save(f"count/{name}")

    @synced
    def state(self) -> dict[str, Any]:
        return {"counts": dict(self.counts)}


def test_a_change_writes_the_rows_it_names_and_a_new_runtime_reads_them_back() -> None:
    table = ConflictingTable(conflicts=0)
    tally = Tally.from_table(table)
    assert tally.state() == {"counts": {}}
    tally.add("a")
    tally.add("a")
    tally.add("b")
    tally.drop("b")  # row() says None: the row is deleted
    assert table.rows == {"count/a": 2}
    assert Tally.from_table(table).state() == {"counts": {"a": 2}}


def test_a_change_that_loses_the_race_runs_again_on_the_rows_another_writer_left() -> None:
    table = ConflictingTable(conflicts=0)
    mine = Tally.from_table(table)
    mine.add("a")
    table.rows["count/a"] = 5  # another writer
    table.conflicts = 1
    assert mine.add("a") == 6  # reloaded after the lost race, then counted once
    assert table.rows == {"count/a": 6}


def test_a_reload_takes_the_rows_state_whole_back_to_the_class_defaults() -> None:
    table = ConflictingTable(conflicts=0)
    tally = Tally.from_table(table)
    tally.add("a")
    table.rows.clear()  # another writer emptied the table
    tally.table_sync.load()
    assert tally.state() == {"counts": {}}  # nothing of the old memory is left
    assert "counts" not in vars(tally)


def test_restore_replaces_every_row_or_refuses_and_changes_nothing() -> None:
    table = ConflictingTable(conflicts=0)
    tally = Tally.from_table(table)
    tally.add("a")
    with pytest.raises(Refused, match="a tally state is"):
        tally.restore({"counts": {"b": "many"}})
    assert tally.state() == {"counts": {"a": 1}}
    assert table.rows == {"count/a": 1}
    tally.restore({"counts": {"b": 3, "c": 1}})
    assert table.rows == {"count/b": 3, "count/c": 1}
    assert tally.table is table


def test_a_state_saved_whole_migrates_to_rows_and_runs_reporting_its_changes() -> None:
    table = ConflictingTable(conflicts=0)
    Tally.migrate({"counts": {"a": 2}}, table)
    assert table.rows == {"count/a": 2}
    changes: list[int] = []
    saved = Tally.factory({"counts": {"a": 2}}, lambda: changes.append(1))
    assert saved.add("a") == 3
    assert changes == [1]
    assert saved.table is None


def test_a_runtime_without_a_whole_state_says_what_to_define() -> None:
    class Rows(TableRuntime):
        def read_rows(self, rows: dict[str, Any]) -> None:
            pass

    with pytest.raises(NotImplementedError, match="Rows has no whole state: define load_state"):
        Rows.migrate({}, ConflictingTable(conflicts=0))
