"""The embedded store: one server's memory and its state directory (the default)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_presets.lib.listeners import Listeners
from agent_presets.server.store.base import SERVER, PrincipalState, Subscriber


class EmbeddedStore:
    """Principal state, the bus and the counters of a server that has no replica.

    Nothing leaves the process: the bus calls its subscribers on the
    publisher's thread, in order, and the counters live as long as the server
    does (as the budgets always have: a restart resets them).
    """

    url = "embedded"

    def __init__(self, state_dir: str | Path | None = None) -> None:
        self.state_dir = None if state_dir is None else Path(state_dir)
        self._lock = threading.Lock()
        self._principals: dict[str, PrincipalState] = {}
        self._counters: dict[str, int] = {}
        self._subscribers: Listeners[Subscriber] = Listeners()

    # -- principal state ---------------------------------------------------------

    def load_principal(self, name: str) -> PrincipalState | None:
        return self._principals.get(name)

    def save_principal(self, name: str, state: PrincipalState | None) -> None:
        with self._lock:
            if state is None:
                self._principals.pop(name, None)
            else:
                self._principals[name] = state

    def principal_names(self) -> list[str]:
        return sorted(n for n in self._principals if n != SERVER)

    # -- the bus -----------------------------------------------------------------

    def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        self._subscribers.notify(topic, payload)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers.add(callback)
        return lambda: self._subscribers.remove(callback)

    # -- budget counters ---------------------------------------------------------

    def charge(
        self, counters: Sequence[tuple[str, int | None]], *, count: bool = True
    ) -> str | None:
        with self._lock:
            for key, limit in counters:
                if limit is not None and self._counters.get(key, 0) >= limit:
                    return key
            if count:
                for key, _limit in counters:
                    self._counters[key] = self._counters.get(key, 0) + 1
            return None

    def counts(self, prefix: str = "") -> dict[str, int]:
        with self._lock:
            return {k: v for k, v in self._counters.items() if k.startswith(prefix)}

    def close(self) -> None:
        pass
