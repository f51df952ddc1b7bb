"""The headless host's public names: the embedded default app that ``presets serve`` runs.

The served host lives in the server package (``agent_presets.server.host``, its
stores in ``agent_presets.server.store``); this package names it for plugins and
hosts, beside the Space shell's context fields and defaults. Each name loads on
first use: the served host itself reads the shell's defaults from here, so
importing this package must not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_presets._lazy import lazy_exports

# Each name with the module that defines it; __all__ is derived, and the typing
# imports below name the same.
_EXPORTS = {
    "SURFACES": "host.context_fields",
    "HEADLESS_DEFAULTS": "host.defaults",
    "THEMES": "server.host.headless",
    "HeadlessHost": "server.host.headless",
    "Shell": "server.host.headless",
    "TableMigration": "server.host.headless",
    "TableRuntimeFactory": "server.host.headless",
    "WorldRuntimeFactory": "server.host.headless",
    "ServeOptions": "server.host.options",
    "RootOverlapError": "server.host.roots",
    "check_root": "server.host.roots",
    "StateLock": "server.store.lock",
    "StateLockedError": "server.store.lock",
    "acquire_state_lock": "server.store.lock",
    "StateStore": "server.store.statedb",
    "Table": "server.store.statedb",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, "agent_presets", _EXPORTS, globals())


if TYPE_CHECKING:
    # Each "X as X": a re-export type checkers and linters see without __all__.
    from agent_presets.host.context_fields import SURFACES as SURFACES
    from agent_presets.host.defaults import HEADLESS_DEFAULTS as HEADLESS_DEFAULTS
    from agent_presets.server.host.headless import THEMES as THEMES
    from agent_presets.server.host.headless import HeadlessHost as HeadlessHost
    from agent_presets.server.host.headless import Shell as Shell
    from agent_presets.server.host.headless import TableMigration as TableMigration
    from agent_presets.server.host.headless import TableRuntimeFactory as TableRuntimeFactory
    from agent_presets.server.host.headless import WorldRuntimeFactory as WorldRuntimeFactory
    from agent_presets.server.host.options import ServeOptions as ServeOptions
    from agent_presets.server.host.roots import RootOverlapError as RootOverlapError
    from agent_presets.server.host.roots import check_root as check_root
    from agent_presets.server.store.lock import StateLock as StateLock
    from agent_presets.server.store.lock import StateLockedError as StateLockedError
    from agent_presets.server.store.lock import acquire_state_lock as acquire_state_lock
    from agent_presets.server.store.statedb import StateStore as StateStore
    from agent_presets.server.store.statedb import Table as Table
