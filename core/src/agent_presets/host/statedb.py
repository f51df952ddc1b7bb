"""The state database: one SQLite file per state directory, a table of rows per runtime.

A runtime persists what changed, not the whole of its state: each change puts
or deletes the rows it touched, inside one transaction, so a call costs what
it changed whatever the size of the document or its history.

Durability: WAL journal with ``synchronous=NORMAL``. A commit is appended to
the write-ahead log before ``commit`` returns, so once a tool call is
acknowledged its rows survive the process being killed (SIGKILL included):
the log is in the operating system's cache and SQLite replays it on the next
open. What NORMAL gives up against FULL is only the last commits on a power
loss or kernel crash, the price of not calling fsync on every change; the
database itself stays consistent either way. Pass ``synchronous="FULL"`` to
``StateStore`` to pay that fsync.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

DB_FILE: Final = "state.db"
SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS rows (
    runtime TEXT NOT NULL,
    world TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (runtime, world, key)
) WITHOUT ROWID
"""


class StateStore:
    """The state directory's database, shared by every runtime of every world.

    One connection, serialised by a lock: tool calls arrive on several
    threads, and SQLite's own locking is per connection. ``transaction()``
    nests; only the outermost one commits, and an exception in it rolls back
    every row written inside.
    """

    def __init__(
        self, path: str | Path, *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute(SCHEMA)

    def table(self, runtime: str, world: str) -> Table:
        """The rows of one runtime in one world."""
        return Table(self, runtime, world)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make every write inside one commit; roll all of them back on an exception."""
        with self._lock:
            if self._depth == 0:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if self._depth == 0:
                self._db.execute("COMMIT")

    def drop_world(self, world: str) -> None:
        """Delete every runtime's rows of ``world``."""
        with self.transaction():
            self._db.execute("DELETE FROM rows WHERE world = ?", (world,))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- used by Table -------------------------------------------------------

    def _execute(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self.transaction():
            self._db.execute(sql, params)


class Table:
    """One runtime's rows in one world: JSON values under string keys.

    Writes outside ``transaction()`` commit one by one; a runtime that writes
    several rows for one change wraps them in ``with table.transaction():``.
    ``items(prefix)`` returns rows in key order, so zero-padded numbers in
    keys keep their order.
    """

    def __init__(self, store: StateStore, runtime: str, world: str) -> None:
        self.store = store
        self.runtime = runtime
        self.world = world

    def get(self, key: str, default: Any = None) -> Any:
        rows = self.store._execute(
            "SELECT value FROM rows WHERE runtime = ? AND world = ? AND key = ?",
            (self.runtime, self.world, key),
        )
        return json.loads(rows[0][0]) if rows else default

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        rows = self.store._execute(
            "SELECT key, value FROM rows WHERE runtime = ? AND world = ? "
            "AND substr(key, 1, ?) = ? ORDER BY key",
            (self.runtime, self.world, len(prefix), prefix),
        )
        return [(key, json.loads(value)) for key, value in rows]

    def keys(self, prefix: str = "") -> list[str]:
        rows = self.store._execute(
            "SELECT key FROM rows WHERE runtime = ? AND world = ? "
            "AND substr(key, 1, ?) = ? ORDER BY key",
            (self.runtime, self.world, len(prefix), prefix),
        )
        return [key for (key,) in rows]

    def is_empty(self) -> bool:
        return not self.store._execute(
            "SELECT 1 FROM rows WHERE runtime = ? AND world = ? LIMIT 1",
            (self.runtime, self.world),
        )

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (anything ``json.dumps`` takes) under ``key``, replacing any."""
        text = json.dumps(value, separators=(",", ":"))
        self.store._write(
            "INSERT OR REPLACE INTO rows (runtime, world, key, value) VALUES (?, ?, ?, ?)",
            (self.runtime, self.world, key, text),
        )

    def delete(self, key: str) -> None:
        self.store._write(
            "DELETE FROM rows WHERE runtime = ? AND world = ? AND key = ?",
            (self.runtime, self.world, key),
        )

    def clear(self) -> None:
        self.store._write(
            "DELETE FROM rows WHERE runtime = ? AND world = ?", (self.runtime, self.world)
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.store.transaction():
            yield
