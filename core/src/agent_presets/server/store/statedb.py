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

Privacy: the file holds the agent's work, so it is mode 0600 in a 0700
directory from creation (SQLite gives its ``-wal`` and ``-shm`` files the
database's mode), and an existing one an earlier version left readable is
tightened on open.

Damage is found on open, not call by call: ``PRAGMA quick_check`` reads every
page, and every row must read back as JSON. A damaged file raises
``sqlite3.DatabaseError`` saying what is wrong, before any runtime sees it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Final, Literal

from agent_presets.lib.atomicfile import private_directory, private_file
from agent_presets.server.store.lock import refuse_symlink
from agent_presets.server.store.nesting import NestedTransaction

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
        private_directory(self.path.parent)
        # Made 0600 before SQLite opens it: SQLite would make it 0644, and its
        # -wal and -shm files take the database's mode.
        # SQLite follows a symlink for the database and its -wal and -shm files.
        for suffix in ("", "-wal", "-shm"):
            refuse_symlink(self.path.with_name(self.path.name + suffix))
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600))
        for suffix in ("", "-wal", "-shm"):
            private_file(self.path.with_name(self.path.name + suffix))
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._nested = NestedTransaction(
            self._lock,
            begin=lambda: self._db.execute("BEGIN IMMEDIATE"),
            commit=lambda: self._db.execute("COMMIT"),
            rollback=lambda: self._db.execute("ROLLBACK"),
        )
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute(SCHEMA)
            self._check()
        except BaseException:
            self._db.close()
            raise

    def _check(self) -> None:
        """Raise ``sqlite3.DatabaseError`` if a page or a row is damaged.

        A flipped byte in a page is what ``quick_check`` finds; one inside a
        value leaves the pages sound but the row unreadable (not UTF-8, not
        JSON), so every row is read back as ``Table`` reads it. Both read the
        whole file once per start: about a second for 40 MB (200,000 rows), a
        fraction of loading it.
        """
        found = [str(line) for (line,) in self._db.execute("PRAGMA quick_check(3)")]
        if found != ["ok"]:
            detail = "; ".join(found).replace("\n", "; ")
            raise sqlite3.DatabaseError(f"it is damaged: {_shorten(detail)}")
        self._db.text_factory = bytes  # so a value that is not UTF-8 is found by its row
        try:
            # SQLite's own JSON reader first, for speed; what it doubts (NaN, which
            # Python's json writes) is read by Python's, as Table.get reads it.
            for runtime, world, key, value, valid in self._db.execute(
                "SELECT runtime, world, key, value,"
                " CASE WHEN typeof(value) = 'text' THEN json_valid(value) ELSE 0 END FROM rows"
            ):
                try:
                    text = value.decode("utf-8") if isinstance(value, bytes) else value
                    if not valid:
                        json.loads(text)
                except (ValueError, TypeError, RecursionError):
                    where = f"row {_text(key)} of {_text(runtime)} in world {_text(world)}"
                    raise sqlite3.DatabaseError(f"its {where} is not JSON") from None
        finally:
            self._db.text_factory = str

    def table(self, runtime: str, world: str) -> Table:
        """The rows of one runtime in one world."""
        return Table(self, runtime, world)

    def transaction(self) -> AbstractContextManager[None]:
        """Make every write inside one commit; roll all of them back on an exception."""
        return self._nested()

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

    def snapshot(self) -> list[tuple[str, Any]]:
        return self.items()

    def stale(self) -> bool:
        """Never: the state directory has one writer (its lock), so nothing moves under it."""
        return False


def _text(value: Any) -> str:
    """A stored name for a message: decoded whatever its bytes, quoted, short."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return _shorten(repr(value), 60)


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
