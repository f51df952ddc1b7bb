"""The headless host: the embedded default app that ``presets serve`` runs.

It holds the shell state a real host reports (surface, activity, canvas
visibility, theme, current world), a sandboxed file root, and slots that
plugins fill with reference runtimes through ``presets_headless_runtime``.
Shell changes feed ``PresetManager.set_context``; every change is persisted
in the state directory (runtimes in its SQLite database, ``server.store.statedb``,
or on Redis with ``presets serve --store redis://...``, ``server.store.redisrows``,
shared by every replica on it), so a restart resumes where it stopped. One host
at a time writes a state directory (``StateLock``, ``server.store.lock``), and
the file root may not overlap it (``check_root``).
"""

from __future__ import annotations

from agent_presets.host.context_fields import SURFACES
from agent_presets.host.defaults import HEADLESS_DEFAULTS
from agent_presets.host.headless import (
    THEMES,
    HeadlessHost,
    Shell,
    TableMigration,
    TableRuntimeFactory,
    WorldRuntimeFactory,
)
from agent_presets.host.options import ServeOptions
from agent_presets.host.roots import RootOverlapError, check_root
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
