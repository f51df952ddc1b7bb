"""The headless host's public names: the embedded default app that ``presets serve`` runs.

The served host lives in the server package (``agent_presets.server.host``, its
stores in ``agent_presets.server.store``); this package names it for plugins and
hosts, beside the Space shell's context fields and defaults.
"""

from __future__ import annotations

from agent_presets.host.context_fields import SURFACES
from agent_presets.host.defaults import HEADLESS_DEFAULTS
from agent_presets.server.host.headless import (
    THEMES,
    HeadlessHost,
    Shell,
    TableMigration,
    TableRuntimeFactory,
    WorldRuntimeFactory,
)
from agent_presets.server.host.options import ServeOptions
from agent_presets.server.host.roots import RootOverlapError, check_root
from agent_presets.server.store.lock import StateLock, StateLockedError, acquire_state_lock
from agent_presets.server.store.statedb import StateStore, Table

__all__ = [
    "HEADLESS_DEFAULTS",
    "SURFACES",
    "THEMES",
    "HeadlessHost",
    "RootOverlapError",
    "ServeOptions",
    "Shell",
    "StateLock",
    "StateLockedError",
    "StateStore",
    "Table",
    "TableMigration",
    "TableRuntimeFactory",
    "WorldRuntimeFactory",
    "acquire_state_lock",
    "check_root",
]
