"""Each principal's own context and overrides, over the server's: what it is served.

A principal is who presented the authorization (``agent_presets.lib.principal``).
Every principal starts out following the server: it sees the host's context
and the server-wide overrides, as ``local`` (stdio, an unauthenticated
loopback server) always does, at no cost. A principal's own change (its
agent switching surface, ``presets context set --principal NAME``,
``presets on NAME --principal P``) gives it state of its own, kept in the
store (``agent_presets.server.store``): its own context (set once, it no
longer follows the host's) and its own overrides (each wins over the
server-wide override of its preset). Its tools, prompts and resources are
then resolved from those, by the same manager, memo and tool defs as the
server's own.

A principal's resolution is kept in memory while it is used, and dropped
after ``idle_seconds`` without use; its state stays in the store, so it comes
back as it was. Changes made on another replica reach this one on the
store's bus (``principal`` messages), so a principal is served the same by
every replica.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Final

from agent_presets.lib.listeners import Listeners
from agent_presets.lib.manager import PresetManager
from agent_presets.lib.matching import Context
from agent_presets.lib.model import PresetValidationError, Resolution, ToolDef
from agent_presets.lib.principal import LOCAL
from agent_presets.server.delivery import agent_call, calling
from agent_presets.server.store import SERVER, PrincipalState, Store

IDLE_SECONDS: Final = 900.0
"""How long a principal's resolution stays in memory unused (its state stays in the store)."""

TOPIC: Final = "principal"
"""The bus topic of a principal's changed state: ``{"name": NAME}`` (``*``: the server's)."""

NAME_RE_TEXT: Final = "a token's name, or local"


@dataclass(frozen=True)
class Audience:
    """Whose connections hear a change: ``only`` these principals, or all but ``skip``."""

    only: frozenset[str] | None = None
    skip: frozenset[str] = frozenset()

    def includes(self, principal: str) -> bool:
        if self.only is not None:
            return principal in self.only
        return principal not in self.skip


EVERYONE: Final = Audience()

ChangeListener = Callable[[Audience], None]


@dataclass
class _View:
    """A principal with state of its own, resolved (kept while it is used)."""

    state: PrincipalState
    context: Context
    overrides: dict[str, str]
    resolution: Resolution
    defs: tuple[ToolDef, ...]
    generation: int
    used: float = field(default=0.0)


class Principals:
    """The principals a server serves: each one's context, overrides and resolution."""

    def __init__(
        self,
        manager: PresetManager,
        store: Store,
        *,
        idle_seconds: float = IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.manager = manager
        self.store = store
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._lock = threading.RLock()
        # A principal absent here has not been looked up since it was last dropped;
        # None: looked up, and it follows the server wholly.
        self._views: dict[str, _View | None] = {}
        self._generation = 0
        self._listeners: Listeners[ChangeListener] = Listeners()
        self._last_sweep = clock()
        manager.add_on_change(self._server_changed)
        self._unsubscribe = store.subscribe(self._heard)
        if store.load_principal(SERVER) is not None:  # a replica joins: the shared ones
            self._apply_server_overrides()

    def close(self) -> None:
        self.manager.remove_on_change(self._server_changed)
        self._unsubscribe()

    # -- reading -------------------------------------------------------------

    def follows_server(self, principal: str) -> bool:
        """Whether ``principal`` is served exactly what the server's own state gives."""
        return self._view(principal) is None

    def resolution(self, principal: str) -> Resolution:
        view = self._view(principal)
        return self.manager.resolve() if view is None else view.resolution

    def tool_defs(self, principal: str) -> tuple[ToolDef, ...] | None:
        """The principal's preset tools; None when it follows the server (the registry's)."""
        view = self._view(principal)
        return None if view is None else view.defs

    def context(self, principal: str) -> Context:
        view = self._view(principal)
        return self.manager.get_context() if view is None else dict(view.context)

    def overrides(self, principal: str) -> dict[str, str]:
        """The overrides in force for ``principal``: the server's, with its own over them."""
        view = self._view(principal)
        return self.manager.get_overrides() if view is None else dict(view.overrides)

    def own(self, principal: str) -> PrincipalState | None:
        """What ``principal`` set itself (None: nothing; it follows the server)."""
        view = self._view(principal)
        return None if view is None else view.state

    def names(self) -> list[str]:
        """``local`` and every principal with state of its own, sorted."""
        return sorted({LOCAL, *self.store.principal_names()})

    def in_memory(self) -> int:
        """How many principals' resolutions are held now (the rest cost nothing here)."""
        return sum(1 for v in self._views.values() if v is not None)

    # -- changing ------------------------------------------------------------

    def set_context(self, principal: str, changes: Mapping[str, Any]) -> Context:
        """Change fields of ``principal``'s own context; refused whole, changing nothing.

        ``local`` is the server's own principal: its context is the host's,
        which the controller changes through the host.
        """
        check_principal(principal)
        if principal == LOCAL:
            raise ValueError("local's context is the host's: change it through the host")
        with self._lock:
            view = self._view(principal)
            state = view.state if view is not None else PrincipalState()
            base = view.context if view is not None else self.manager.get_context()
            context = self.manager.check_context({**base, **changes})
            self._commit(principal, PrincipalState(context, dict(state.overrides)))
            return dict(context)

    def set_override(self, principal: str, preset: str, state: str) -> None:
        """Set ``principal``'s own override of ``preset`` (``auto``: the server's applies)."""
        check_principal(principal)
        if principal == LOCAL:
            raise ValueError("local's overrides are the server's: set them on the manager")
        self.manager.check_override(preset, state)
        with self._lock:
            view = self._view(principal)
            own = view.state if view is not None else PrincipalState()
            overrides = dict(own.overrides)
            if state == "auto":
                overrides.pop(preset, None)
            else:
                overrides[preset] = state
            if overrides == dict(own.overrides):
                return
            kept = PrincipalState(own.context, overrides)
            self._commit(principal, None if _empty(kept) else kept)

    def share_server_overrides(self) -> None:
        """Keep the manager's overrides as the server-wide ones, for every replica."""
        overrides = self.manager.get_overrides()
        self.store.save_principal(SERVER, PrincipalState(None, overrides) if overrides else None)
        self.store.publish(TOPIC, {"name": SERVER})

    def forget(self, principal: str) -> None:
        """Drop ``principal``'s own state: it follows the server again."""
        check_principal(principal)
        with self._lock:
            self._commit(principal, None)

    def add_on_change(self, callback: ChangeListener) -> None:
        """``callback(audience)`` when what some principals are served may have changed."""
        self._listeners.add(callback)

    def remove_on_change(self, callback: ChangeListener) -> None:
        self._listeners.remove(callback)

    # -- internals -----------------------------------------------------------

    def _commit(self, principal: str, state: PrincipalState | None) -> None:
        """Check ``state`` resolves, keep it in the store, tell every replica and listener."""
        if state is not None:
            self._resolved(state)  # raises (a tool id clash ...) before anything is kept
        before = self._views.get(principal)
        self.store.save_principal(principal, state)
        self._views.pop(principal, None)
        after = self._view(principal)
        # "own": the principal's own tool call made it, so every replica leaves that
        # principal's stable list as it is (agent_presets.server.delivery).
        own = {"own": True} if calling() == principal else {}
        self.store.publish(TOPIC, {"name": principal, **own})
        if _served(before, self.manager) != _served(after, self.manager):
            self._listeners.notify(Audience(only=frozenset({principal})))

    def _view(self, principal: str) -> _View | None:
        now = self._clock()
        if now - self._last_sweep > self.idle_seconds:
            self._sweep(now)
        held = self._views.get(principal, _MISSING)
        view: _View | None = None if held is _MISSING else held
        if held is _MISSING or (view is not None and view.generation != self._generation):
            if principal == LOCAL:
                return None
            with self._lock:
                state = self.store.load_principal(principal)
                view = None if state is None or _empty(state) else self._build(state)
                self._views[principal] = view
        if view is not None:
            view.used = now
        return view

    def _build(self, state: PrincipalState) -> _View:
        context, overrides, resolution, defs = self._resolved(state)
        return _View(state, context, overrides, resolution, defs, self._generation)

    def _resolved(
        self, state: PrincipalState
    ) -> tuple[Context, dict[str, str], Resolution, tuple[ToolDef, ...]]:
        manager = self.manager
        context = dict(state.context) if state.context is not None else manager.get_context()
        overrides = {**manager.get_overrides(), **state.overrides}
        resolution, defs = manager.resolve_for(context, overrides)
        return context, overrides, resolution, defs

    def _sweep(self, now: float) -> None:
        with self._lock:
            self._last_sweep = now
            idle = [
                name
                for name, view in self._views.items()
                if view is None or now - view.used > self.idle_seconds
            ]
            for name in idle:
                del self._views[name]

    def _server_changed(self, _resolution: Resolution) -> None:
        """The server's context or overrides changed: re-resolve who inherits from them."""
        with self._lock:
            before = {n: v for n, v in self._views.items() if v is not None}
            self._generation += 1
            unchanged = set()
            for name, view in before.items():
                try:
                    after = self._view(name)
                except PresetValidationError:
                    continue  # served as before until its next change; it hears nothing
                if after is not None and after.resolution == view.resolution:
                    unchanged.add(name)
        self._listeners.notify(Audience(skip=frozenset(unchanged)))

    def _heard(self, topic: str, payload: Mapping[str, Any]) -> None:
        """Another replica (or this one) changed a principal's state in the store."""
        if topic != TOPIC:
            return
        name = payload.get("name")
        if not isinstance(name, str):
            return
        if name == SERVER:
            self._apply_server_overrides()
            return
        with self._lock:
            before = self._views.pop(name, _MISSING)
            # Not looked up here, it may still listen here (a listen stream opened
            # before any list): what it was served is unknown, so it is told.
            after = None if before is _MISSING else self._view(name)
        if before is None or after is None or before.resolution != after.resolution:
            with agent_call(name) if payload.get("own") is True else nullcontext():
                self._listeners.notify(Audience(only=frozenset({name})))

    def _apply_server_overrides(self) -> None:
        """The server-wide overrides changed in the store: make them this manager's."""
        state = self.store.load_principal(SERVER)
        wanted = dict(state.overrides) if state is not None else {}
        manager = self.manager
        for name in set(manager.get_overrides()) | set(wanted):
            if name in manager.registry:
                manager.set_override(name, wanted.get(name, "auto"))


_MISSING: Final[Any] = object()


def _empty(state: PrincipalState) -> bool:
    return state.context is None and not state.overrides


def _served(view: _View | None, manager: PresetManager) -> Resolution:
    return manager.resolve() if view is None else view.resolution


def check_principal(name: str) -> None:
    """Refuse a principal name no token could have (``presets tokens`` names them)."""
    from agent_presets.server.tokens import check_name

    if name == LOCAL:
        return
    if name == SERVER:
        raise PresetValidationError(f"principal {name!r} is not {NAME_RE_TEXT}")
    check_name(name)
