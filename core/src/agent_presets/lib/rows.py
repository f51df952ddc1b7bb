"""``RowTable``: what a runtime may rely on of the table its state is kept in.

The headless host gives each per-world runtime a table of rows
(``host.add_table_runtime``, ``agent_presets.host.Table``); a runtime types
its table as this protocol, so it depends on the contract, not the host.

A table may have other writers: two replicas of a server on one Redis share
every world's tables. A runtime that keeps its rows in memory stays correct
through ``TableSync``: before each operation it reloads what another writer
changed, and a commit that lost the race reloads and runs the operation again.
On the embedded table (one writer: the state directory's lock) nothing is
ever stale and nothing conflicts, so there it only serialises the operations.
``TableRuntime`` is the frame of such a runtime, which a subclass fills with
its own state and rows.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import (
    Any,
    ClassVar,
    Concatenate,
    Final,
    ParamSpec,
    Protocol,
    Self,
    TypeVar,
    runtime_checkable,
)

ATTEMPTS: Final = 30
"""How many times ``TableSync.run`` runs an operation that keeps losing the race to commit."""
BACKOFF_CAP: Final = 0.05
"""The longest pause (seconds) between two attempts; each pause is random up to it."""


class RowConflict(Exception):
    """Another writer committed to the table since this one read it; nothing was written."""


@runtime_checkable
class RowTable(Protocol):
    """One runtime's rows in one world: JSON values under string keys, in key order."""

    def get(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default``."""
        ...

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        """``(key, value)`` pairs in key order, only keys starting with ``prefix``."""
        ...

    def keys(self, prefix: str = "") -> list[str]:
        """The keys starting with ``prefix``, in key order."""
        ...

    def put(self, key: str, value: Any) -> None:
        """Store any JSON value under ``key``, replacing the old one."""
        ...

    def delete(self, key: str) -> None:
        """Remove a row; no error when it is absent."""
        ...

    def clear(self) -> None:
        """Remove every row of this runtime in this world."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """``with table.transaction():`` the writes inside commit together, or none does.

        After ``snapshot()``, a commit also requires that no other writer has
        committed since that snapshot (or this table's own last commit): if
        one has, it raises ``RowConflict`` and writes nothing.
        """
        ...

    def snapshot(self) -> list[tuple[str, Any]]:
        """Every row, read at one instant: what a runtime loads into memory.

        From then on the table knows which version of the rows its runtime
        holds: ``stale()`` tells whether another writer moved past it, and
        ``transaction()`` commits only on top of it.
        """
        ...

    def stale(self) -> bool:
        """Whether another writer committed since the last ``snapshot()`` or own commit."""
        ...


P = ParamSpec("P")
R = TypeVar("R")


class TableSync:
    """Runs a runtime's operations one at a time, on rows as the table holds them now.

    ``load(rows)`` replaces the runtime's memory with ``rows`` (a whole
    ``snapshot()``). ``run(operation)``, under the runtime's lock:

    1. reloads when the table is stale (another writer committed) or when the
       last operation failed for a reason other than a refusal, so memory never
       keeps a change that did not commit;
    2. runs ``operation``, which changes memory and commits its rows in one
       ``table.transaction()``;
    3. on ``RowConflict`` (another writer committed first), reloads and runs it
       again, after a short random pause, up to ``attempts`` times; then raises
       ``error`` saying so.

    An operation must therefore write only inside its one transaction, and be
    safe to run again from freshly loaded rows: allocate ids from a row written
    in that same transaction (a counter), never from memory alone, so two
    writers never hand out one id. Exceptions of type ``error`` are refusals
    (nothing changed, by the runtime's own rule) and pass through untouched.

    With no table (a runtime saved whole, or one in a test) ``run`` only takes
    the lock. Calls nest: an operation that calls another runs it directly.
    """

    def __init__(
        self,
        table: RowTable | None,
        load: Callable[[dict[str, Any]], None],
        *,
        error: type[Exception] = RuntimeError,
        attempts: int = ATTEMPTS,
    ) -> None:
        self.table = table
        self._load = load
        self.error = error
        self.attempts = attempts
        self.lock = threading.RLock()
        self._depth = 0
        self._stale = True

    def load(self) -> None:
        """Replace the runtime's memory with the table's rows as they are now."""
        with self.lock:
            if self.table is not None:
                self._load(dict(self.table.snapshot()))
            self._stale = False

    def run(self, operation: Callable[[], R]) -> R:
        """``operation()`` on current rows, run again after a lost race (see the class)."""
        with self.lock:
            if self._depth or self.table is None:
                self._depth += 1
                try:
                    return operation()
                finally:
                    self._depth -= 1
            return self._attempt(operation, self.table)

    def _attempt(self, operation: Callable[[], R], table: RowTable) -> R:
        for attempt in range(self.attempts):
            if attempt:
                # Random, so two writers that keep colliding fall out of step.
                time.sleep(random.uniform(0, min(BACKOFF_CAP, 0.001 * 2**attempt)))
            if self._stale or table.stale():
                self.load()
            self._depth += 1
            try:
                return operation()
            except RowConflict:
                self._stale = True
            except self.error:
                raise
            except BaseException:
                self._stale = True  # what memory holds may not be what committed
                raise
            finally:
                self._depth -= 1
        raise self.error(
            f"other writers changed this state {self.attempts} times while this call was "
            "being saved, so it was not saved; call it again"
        )


class Synced(Protocol):
    """A runtime whose operations go through its ``table_sync`` (see ``synced``)."""

    table_sync: TableSync


S = TypeVar("S", bound=Synced)


def synced(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Run a runtime's method through ``self.table_sync`` (``TableSync.run``).

    Decorate every public method that reads or changes the rows' state: a
    read then sees what other writers committed, and a change is retried on
    fresh rows when it loses the race to commit.
    """

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.table_sync.run(lambda: method(self, *args, **kwargs))

    return wrapper


class TableRuntime:
    """A runtime whose state is in memory and, one row per part, in a host's table.

    What the reference runtimes share, so that a subclass writes only its
    own state. It keeps its state in attributes: set in ``__init__`` (which
    keeps the signature ``(changed=None, *, table=None)`` and calls
    ``super().__init__(changed, table=table)`` first), or defaults on the
    class that ``read_rows`` sets on the runtime. It defines:

    - ``error``: its refusal type (a class attribute), which ``TableSync``
      lets through untouched;
    - ``read_rows(rows)``: read a table's rows (never none) into this fresh
      runtime;
    - ``row(key)``: the value row ``key`` holds for the state in memory now,
      or None for no row;
    - for the whole-state forms (``factory``, ``migrate``, ``restore``) also
      ``load_state(state)``, read a whole state into this fresh runtime or
      raise ``error``, and ``row_keys()``, every row key of the state.

    Its public methods that read or change the state are ``@synced``; a
    change updates memory, then ``save``s the rows it changed. Loading never
    changes the runtime half way: rows and states are read into a fresh
    runtime, whose state this one then takes.
    """

    error: ClassVar[type[Exception]] = RuntimeError

    def __init__(
        self, changed: Callable[[], None] | None = None, *, table: RowTable | None = None
    ) -> None:
        self.table = table
        self._changed = changed or _nothing
        self.table_sync = TableSync(table, self._load_rows, error=self.error)

    @classmethod
    def from_table(cls, table: RowTable) -> Self:
        """The runtime on ``table``'s rows: ``host.add_table_runtime``'s factory."""
        runtime = cls(table=table)
        runtime.table_sync.load()
        return runtime

    @classmethod
    def factory(cls, saved: Mapping[str, Any] | None, changed: Callable[[], None]) -> Self:
        """The runtime of a state saved whole (or none yet), telling ``changed`` of each change."""
        runtime = cls(changed)
        if saved is not None:
            runtime.load_state(saved)
        return runtime

    @classmethod
    def migrate(cls, saved: Mapping[str, Any], table: RowTable) -> None:
        """Write a state that an earlier version saved whole into ``table``, as rows."""
        runtime = cls.factory(saved, _nothing)
        # Writing, not syncing: a runtime synced with the table would read its rows first.
        runtime.table = table
        runtime.save_all()

    def read_rows(self, rows: dict[str, Any]) -> None:
        """Read a table's rows (never none) into this fresh runtime: the subclass's."""
        raise NotImplementedError(f"{type(self).__name__} must define read_rows(rows)")

    def row(self, key: str) -> Any:
        """The value row ``key`` holds for the state in memory now, or None: the subclass's."""
        raise NotImplementedError(f"{type(self).__name__} must define row(key)")

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Read a whole state into this fresh runtime, or raise ``error``: the subclass's."""
        raise NotImplementedError(f"{type(self).__name__} has no whole state: define load_state")

    def row_keys(self) -> list[str]:
        """Every row key of the state in memory, for ``save_all``: the subclass's."""
        raise NotImplementedError(f"{type(self).__name__} has no whole state: define row_keys")

    def save(self, *keys: str) -> None:
        """Write the rows ``keys`` (only those: they are what changed) in one transaction.

        Each is ``row(key)``, computed in the order given, or deleted when
        that is None; then the change is reported.
        """
        if self.table is not None:
            with self.table.transaction():
                for key in keys:
                    value = self.row(key)
                    if value is None:
                        self.table.delete(key)
                    else:
                        self.table.put(key, value)
        self._changed()

    def save_all(self) -> None:
        """Replace every row with the state in memory (``row_keys()``), in one transaction."""
        if self.table is None:
            self._changed()
            return
        with self.table.transaction():
            self.table.clear()
            self.save(*self.row_keys())

    @synced
    def restore(self, state: Mapping[str, Any]) -> None:
        """Replace the whole state with ``state``, or change nothing if it is invalid."""
        fresh = type(self)()
        fresh.load_state(state)
        self._take(fresh)
        self.save_all()

    def _load_rows(self, rows: dict[str, Any]) -> None:
        """``TableSync``'s load: the whole state becomes the one ``rows`` hold."""
        fresh = type(self)()
        if rows:
            fresh.read_rows(rows)
        self._take(fresh)

    def _take(self, fresh: TableRuntime) -> None:
        """Hold ``fresh``'s state and nothing else: all its attributes but the frame."""
        frame = {name: vars(self)[name] for name in _FRAME}
        vars(self).clear()
        vars(self).update(vars(fresh), **frame)


_FRAME: Final = frozenset({"table", "_changed", "table_sync"})
"""What a ``TableRuntime`` keeps when it takes a fresh one's state: its own table and reporting."""


def _nothing() -> None:
    pass
