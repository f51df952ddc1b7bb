"""PresetMcpSync: the only writer of preset tools into the MCP tool registry."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent_presets.lib.manager import PresetManager
from agent_presets.lib.model import OwnershipError, Resolution, ToolDef
from agent_presets.lib.tools import ToolRegistry, ToolRegistryChange


class SyncReport(ToolRegistryChange):
    """What one ``sync()`` changed: the tool registry's change type, named for sync."""


class PresetMcpSync:
    """Keeps the tool registry's preset tools equal to the manager's tool defs.

    It remembers which names it registered (name -> source tool id) and
    touches nothing else: a host's own tools and other owners' tools stay, and
    a resolved name that someone else holds is an ``OwnershipError`` raised
    before anything changes.
    """

    def __init__(
        self, manager: PresetManager, tool_registry: ToolRegistry, owner: str = "agent-presets"
    ) -> None:
        self.manager = manager
        self.tool_registry = tool_registry
        self.owner = owner
        self._managed: dict[str, str] = {}
        self._defs: dict[str, ToolDef] = {}
        self._started = False
        self.last_report = SyncReport()

    def start(self) -> SyncReport:
        """Follow the manager's changes and sync once; returns that sync's report."""
        if not self._started:
            self.manager.add_on_change(self._on_change)
            self._started = True
        return self.sync()

    def stop(self) -> SyncReport:
        """Stop following the manager and remove exactly the tools this sync added."""
        if self._started:
            self.manager.remove_on_change(self._on_change)
            self._started = False
        removed = []
        with self.tool_registry.batch():
            for name in list(self._managed):
                if self._holds(name):
                    self.tool_registry.unregister(name)
                    removed.append(name)
                del self._managed[name]
                del self._defs[name]
        self.last_report = SyncReport(removed=tuple(removed))
        return self.last_report

    def sync(self) -> SyncReport:
        """Make the registry hold exactly the manager's current tools under this owner.

        Registers new tools, re-registers those whose source changed and
        removes only its own stale ones; a name held by anyone else raises
        ``OwnershipError`` before anything changes. One notification at most.
        """
        desired: dict[str, ToolDef] = {}
        for tool_def in self.manager.get_tool_defs():
            if tool_def.managed_owner != self.owner:
                tool_def = replace(tool_def, managed_owner=self.owner)
            desired[tool_def.name] = tool_def
        registry = self.tool_registry
        # Check every name before changing anything. A name is ours only if the registry
        # still holds the very tool this object registered: another sync with the same
        # owner string, or a host that replaced our tool, is someone else.
        for name in desired:
            if name in registry and not self._holds(name):
                holder = registry.owner_of(name)
                raise OwnershipError(
                    f"cannot register preset tool {name!r}: the tool registry already has a "
                    f"tool of that name owned by {holder or 'the host'}; rename one of them"
                )
        added: list[str] = []
        removed: list[str] = []
        replaced: list[str] = []
        with registry.batch():
            for name in [n for n in self._managed if n not in desired]:
                if self._holds(name):
                    registry.unregister(name)
                    removed.append(name)
                del self._managed[name]
                del self._defs[name]
            for name, tool_def in desired.items():
                source = tool_def.managed_source or ""
                current = self._managed.get(name)
                if current is None:
                    registry.register(tool_def)
                    added.append(name)
                elif (
                    current != source
                    or registry.get(name) is None
                    # the same tool, now provided by another preset (or at another risk)
                    or (self._defs[name].preset, self._defs[name].risk)
                    != (tool_def.preset, tool_def.risk)
                    # the same tool id, defined anew (an upstream's tools/list_changed)
                    or (self._defs[name] is not tool_def and self._defs[name] != tool_def)
                ):
                    registry.register(tool_def, replace=True)
                    replaced.append(name)
                else:
                    continue
                self._managed[name] = source
                self._defs[name] = tool_def
        self.last_report = SyncReport(tuple(added), tuple(removed), tuple(replaced))
        return self.last_report

    def _holds(self, name: str) -> bool:
        mine = self._defs.get(name)
        return mine is not None and self.tool_registry.get(name) is mine

    def managed(self) -> dict[str, str]:
        """A copy of the tools this sync holds: MCP name -> source id."""
        return dict(self._managed)

    def status(self) -> dict[str, Any]:
        """Owner, whether started, how many tools it holds and the last report, as plain data."""
        return {
            "owner": self.owner,
            "started": self._started,
            "managed": len(self._managed),
            "last_sync": {
                "added": list(self.last_report.added),
                "removed": list(self.last_report.removed),
                "replaced": list(self.last_report.replaced),
            },
        }

    def _on_change(self, _resolution: Resolution) -> None:
        self.sync()
