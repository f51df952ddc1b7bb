"""The host's public names: what an app plugin, an embedding app and a test host type.

``ServedHost`` is the bare host ``presets serve`` runs: a state directory
and its lock, a store, runtime slots, and a saved context of whatever
fields are set on it (``presets context set``, the control socket, ``POST
/api/context``). An app plugin makes it an app through the hooks: it
declares the context fields, supplies the ``HostDefaults``
(``presets_host_defaults``), attaches runtimes and may keep the context
itself (a ``ContextKeeper``), all through the ``Host`` interface. The host
lives in the server package (``agent_presets.server.host``, its stores in
``agent_presets.server.store``); the interface in the library
(``agent_presets.hosting``). Each name loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets._lazy import lazy_exports

# Each name with the module that defines it; __all__ is derived, and the typing
# imports below name the same.
_EXPORTS = {
    "ContextKeeper": "hosting",
    "Host": "hosting",
    "HostDefaults": "hosting",
    "StateRuntimeFactory": "hosting",
    "TableMigration": "hosting",
    "TableRuntimeFactory": "hosting",
    "ServedHost": "server.host.served",
    "ServeOptions": "server.host.options",
    "RootOverlapError": "server.host.roots",
    "check_root": "server.host.roots",
    "StateLock": "server.store.lock",
    "StateLockedError": "server.store.lock",
    "acquire_state_lock": "server.store.lock",
    "StateStore": "server.store.statedb",
    "Table": "server.store.statedb",
}

_MOVED = {
    "HeadlessHost": "the served host with the Space app's shell is "
    "agent_presets_general.SpaceHost; the bare host is agent_presets.host.ServedHost",
    "Shell": "the Space app's shell is agent_presets_general.Shell",
    "THEMES": "it is agent_presets_general.THEMES",
    "SURFACES": "it is agent_presets_general.SURFACES",
    "HEADLESS_DEFAULTS": "the Space app's defaults are agent_presets_general.SPACE_DEFAULTS",
    "WorldRuntimeFactory": "it is agent_presets.host.StateRuntimeFactory",
}
"""Names the Space app took with it to the general plugin, and where they went."""

__all__ = sorted(_EXPORTS)

_lazy = lazy_exports(__name__, "agent_presets", _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    moved = _MOVED.get(name)
    if moved is not None:
        raise AttributeError(f"agent_presets.host.{name} has moved: {moved}")
    return _lazy(name)


if TYPE_CHECKING:
    # Each "X as X": a re-export type checkers and linters see without __all__.
    from agent_presets.hosting import ContextKeeper as ContextKeeper
    from agent_presets.hosting import Host as Host
    from agent_presets.hosting import HostDefaults as HostDefaults
    from agent_presets.hosting import StateRuntimeFactory as StateRuntimeFactory
    from agent_presets.hosting import TableMigration as TableMigration
    from agent_presets.hosting import TableRuntimeFactory as TableRuntimeFactory
    from agent_presets.server.host.options import ServeOptions as ServeOptions
    from agent_presets.server.host.roots import RootOverlapError as RootOverlapError
    from agent_presets.server.host.roots import check_root as check_root
    from agent_presets.server.host.served import ServedHost as ServedHost
    from agent_presets.server.store.lock import StateLock as StateLock
    from agent_presets.server.store.lock import StateLockedError as StateLockedError
    from agent_presets.server.store.lock import acquire_state_lock as acquire_state_lock
    from agent_presets.server.store.statedb import StateStore as StateStore
    from agent_presets.server.store.statedb import Table as Table
