"""ToolRegistry: the MCP-facing set of tools that a server serves.

Each tool has an owner: the sync object that registered it, or None for a
host's own tool such as ``space_ping``. Changes notify listeners once per
change, or once per ``batch()``, which the MCP server turns into
``notifications/tools/list_changed``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from agent_presets.lib.listeners import Listeners
from agent_presets.lib.model import (
    DEFAULT_NAMESPACE,
    OwnershipError,
    PresetValidationError,
    ToolDef,
)


@dataclass(frozen=True)
class ToolRegistryChange:
    """What one notification covers."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.replaced)

    def __bool__(self) -> bool:
        return self.changed


ChangeListener = Callable[[ToolRegistryChange], None]


class ToolRegistry:
    """Name -> ToolDef, in stable (sorted) order, with owners and change listeners."""

    def __init__(self, namespace_prefix: str = DEFAULT_NAMESPACE) -> None:
        self.namespace_prefix = namespace_prefix
        self._tools: dict[str, ToolDef] = {}
        self._names: list[str] | None = []
        self._listeners: Listeners[ChangeListener] = Listeners()
        self._lock = threading.RLock()
        self._batch_depth = 0
        self._pending: dict[str, list[str]] = {"added": [], "removed": [], "replaced": []}
        self.version = 0

    # -- changes -----------------------------------------------------------

    def register(self, tool_def: ToolDef, replace: bool = False) -> None:
        """Add ``tool_def`` under its name, owned by its ``managed_owner``.

        The name must carry the namespace prefix; a taken name raises unless
        ``replace``. Listeners hear of the change (once per ``batch``).
        """
        name = tool_def.name
        if self.namespace_prefix and not name.startswith(self.namespace_prefix):
            raise PresetValidationError(
                f"tool name {name!r} must start with {self.namespace_prefix!r}"
            )
        with self._lock:
            existing = self._tools.get(name)
            if existing is not None and not replace:
                raise OwnershipError(
                    f"tool {name!r} is already registered (owner: "
                    f"{existing.managed_owner or 'host'}); pass replace=True to replace it"
                )
            self._tools[name] = tool_def
            self._names = None
            self._record("replaced" if existing is not None else "added", name)

    def unregister(self, name: str) -> bool:
        """Remove ``name``; returns whether it was there."""
        with self._lock:
            if self._tools.pop(name, None) is None:
                return False
            self._names = None
            self._record("removed", name)
            return True

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group changes: listeners hear once, when the outermost batch ends."""
        with self._lock:
            self._batch_depth += 1
            try:
                yield
            finally:
                self._batch_depth -= 1
                if self._batch_depth == 0:
                    self._flush()

    # -- reading -----------------------------------------------------------

    def get(self, name: str) -> ToolDef | None:
        """The tool ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """Tool names in stable (sorted) order."""
        with self._lock:
            if self._names is None:
                self._names = sorted(self._tools)
            return list(self._names)

    def list(self) -> list[ToolDef]:
        """The tools, in the stable order of ``names()``."""
        with self._lock:
            return [self._tools[n] for n in self.names()]

    def owner_of(self, name: str) -> str | None:
        """The owner of ``name`` (None for a host's own tool); KeyError if absent."""
        return self._tools[name].managed_owner

    # -- listeners ---------------------------------------------------------

    def add_on_change(self, callback: ChangeListener) -> None:
        """Call ``callback(change)`` after each change (once per outermost ``batch``)."""
        self._listeners.add(callback)

    def remove_on_change(self, callback: ChangeListener) -> None:
        """Stop calling ``callback`` (added before; ``KeyError`` otherwise)."""
        self._listeners.remove(callback)

    def _record(self, kind: str, name: str) -> None:
        self.version += 1
        self._pending[kind].append(name)
        if self._batch_depth == 0:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
        self._pending = {"added": [], "removed": [], "replaced": []}
        change = ToolRegistryChange(
            tuple(pending["added"]), tuple(pending["removed"]), tuple(pending["replaced"])
        )
        if not change:
            return
        self._listeners.notify(change)
