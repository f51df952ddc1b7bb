"""``RowTable``: what a runtime may rely on of the table its state is kept in.

The headless host gives each per-world runtime a table of rows
(``host.add_table_runtime``, ``agent_presets.host.Table``); a runtime types
its table as this protocol, so it depends on the contract, not the host.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable


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
        """``with table.transaction():`` the writes inside commit together, or none does."""
        ...
