"""A replica's name on its legacy session ids, so a balancer can route a session back to it.

A 2025-11-25 session lives in the memory of the replica that opened it: the
SDK keeps its transport and its server task there. Behind a round-robin
balancer its next request must reach the same replica, and the only thing
every request of a session carries is its ``Mcp-Session-Id``. With
``presets serve --replica NAME`` the ids a client sees are ``NAME.`` and the
SDK's own id; the balancer maps that prefix to the replica (docs/replicas.md),
and a request without an id (an ``initialize``, or any 2026-07-28 request)
goes round-robin.

``ReplicaSessionIds`` does it at the wire's edge, outermost: the prefix is
added to the id the SDK answers with and taken off the id a request presents,
so everything inside (the session limit, the event store, the fan-out) knows
the SDK's ids only. An id without this replica's prefix (another replica's,
or the SDK's id bare) is passed on as no session's, so the SDK answers 404 and
the client opens a new session: only the ids this replica handed out reach its
sessions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER

from agent_presets.server.config import check_replica_name

__all__ = ["SEPARATOR", "ReplicaSessionIds"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SEPARATOR: Final = "."
"""Between the replica's name and the SDK's id (a hex string, which has no dot)."""
_SESSION_HEADER: Final = MCP_SESSION_ID_HEADER.lower().encode()


class ReplicaSessionIds:
    """ASGI middleware: session ids on the wire are ``NAME.`` + the SDK's (module docstring)."""

    def __init__(self, app: ASGIApp, name: str) -> None:
        self.app = app
        self.prefix = (check_replica_name(name) + SEPARATOR).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        prefix = self.prefix
        headers = [
            (name, _inner(value, prefix)) if name == _SESSION_HEADER else (name, value)
            for name, value in scope.get("headers", ())
        ]

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [
                    (name, prefix + value) if name.lower() == _SESSION_HEADER else (name, value)
                    for name, value in message.get("headers", ())
                ]
            await send(message)

        await self.app({**scope, "headers": headers}, receive, named)


def _inner(value: bytes, prefix: bytes) -> bytes:
    """The SDK's id for a session id on the wire; for a foreign one, an id no session has."""
    if value.startswith(prefix):
        return value[len(prefix) :]
    # The SDK's ids are hex: with the separator in front, this one is nobody's.
    return SEPARATOR.encode() + value
