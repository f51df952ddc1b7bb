"""One transaction however deeply ``transaction()`` blocks nest, for the host's row stores.

The embedded state database (``statedb``) and the Redis tables
(``redisrows``) both let a runtime wrap several writes in ``transaction()``,
and a block inside another joins it: the outermost block begins the
transaction and, when it ends, commits it, or on an exception rolls back
every write made inside. ``NestedTransaction`` keeps that count once; each
store says what beginning, committing and rolling back are for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["NestedTransaction"]


def _nothing() -> None:
    pass


class NestedTransaction:
    """``with nested():`` blocks under ``lock``, the outermost making the one transaction."""

    def __init__(
        self,
        lock: threading.RLock,
        *,
        commit: Callable[[], object],
        rollback: Callable[[], object],
        begin: Callable[[], object] = _nothing,
    ) -> None:
        self._lock = lock
        self._begin = begin
        self._commit = commit
        self._rollback = rollback
        self._depth = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._begin()
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0:
                    self._rollback()
                raise
            self._depth -= 1
            if self._depth == 0:
                self._commit()
