"""The store's interface: what every store implements (``agent_presets.server.store``).

Everything a server keeps, behind one interface: embedded (the default) or Redis.

A deployment of one server keeps its state in its state directory and its own
memory (``EmbeddedStore``: nothing to install). Several replicas behind a
balancer share one Redis (``presets serve --store redis://HOST:PORT/DB``):
then a principal's context switched through one replica is what the next
request sees on another, a budget counts every replica's calls, and a change
published on one reaches the listeners of all.

The interface is synchronous: its callers are the manager's listeners, the
control socket's threads and the tool handlers' worker threads as well as the
event loop. An implementation that talks to a server (Redis) bounds every
operation by a timeout and raises ``StoreUnavailableError`` (a
``ToolCallError``, so a call gets a clear tool error) when it passes.

What is kept, by part:

- principal state: each principal's own context (None: it follows the
  server's) and overrides; the server-wide overrides under ``SERVER``;
- the bus: ``publish`` reaches every subscriber on every replica, the
  publisher's own included, in the order published;
- budget counters: ``charge`` counts a call against several counters at once,
  all of them or none;
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from agent_presets.lib.model import PresetError, ToolCallError

SERVER: Final = "*"
"""The principal name the server-wide overrides are kept under (no token name has ``*``)."""


class StoreUnavailableError(ToolCallError):
    """The store did not answer in time (Redis down or unreachable), or refused a write
    because it is full; nothing was changed."""


class StoreSettingsError(PresetError):
    """The store is set up in a way that would lose what the server keeps (checked at start)."""


@dataclass(frozen=True)
class PrincipalState:
    """One principal's own state; what it does not set, it takes from the server's."""

    context: Mapping[str, Any] | None = None
    """Its own context, or None while it follows the server's (the host's) context."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """Preset name -> ``on``/``off``; wins over the server-wide override of the preset."""

    def to_json(self) -> dict[str, Any]:
        return {
            "context": None if self.context is None else dict(self.context),
            "overrides": dict(self.overrides),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrincipalState:
        context = data.get("context")
        return cls(
            context=None if context is None else dict(context),
            overrides=dict(data.get("overrides") or {}),
        )


Subscriber = Callable[[str, Mapping[str, Any]], None]
"""``callback(topic, payload)``: called on the publisher's thread (embedded) or on a thread
of the store's (Redis); it must not block."""


class Store(Protocol):
    """What every store implements (``EmbeddedStore``, ``RedisStore``)."""

    url: str
    """``embedded`` or the ``redis://`` URL (without its password), for status and errors."""

    # -- principal state ---------------------------------------------------------

    def load_principal(self, name: str) -> PrincipalState | None: ...

    def save_principal(self, name: str, state: PrincipalState | None) -> None:
        """Keep ``state`` for ``name``; None forgets it (the principal follows the server)."""

    def principal_names(self) -> list[str]:
        """Every principal with state kept, ``SERVER`` left out, sorted."""

    # -- the bus -----------------------------------------------------------------

    def publish(self, topic: str, payload: Mapping[str, Any]) -> None: ...

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` for every publish from now on; returns the unsubscribe."""

    # -- budget counters ---------------------------------------------------------

    def charge(
        self, counters: Sequence[tuple[str, int | None]], *, count: bool = True
    ) -> str | None:
        """Count one call against every ``(key, limit)``, all or none.

        Returns None when every counter was below its limit (and, with
        ``count``, each is now one higher), else the first key at its limit,
        counting nothing. A None limit counts without a limit.
        """

    def counts(self, prefix: str = "") -> dict[str, int]:
        """The counters whose key starts with ``prefix``."""

    def close(self) -> None: ...
