"""Which legacy HTTP session a request belongs to, and which sessions are listening.

The SDK's streamable HTTP app keeps its sessions to itself. ``HttpSessions``
wraps it (ASGI) and learns two things the rest of the server needs:

- the session each request serves, for the event store (``SESSION``): a
  request without a session id may open one, so it gets a fresh scope, and
  the SDK's answer names the new session; the session's tasks are started
  from that request and keep its scope for their life;
- whether a session has its GET stream open now, for the change fan-out: a
  session that is listening hears changes as they happen; one that is not
  hears them on its next response, or when its GET stream opens
  (``Listener``).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from mcp.server.streamable_http import GET_STREAM_KEY, LAST_EVENT_ID_HEADER, MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, is_version_at_least

from agent_presets.server.mcp.eventstore import SESSION, MemoryEventStore, SessionScope

__all__ = ["HttpSessions", "Listener", "modern_request"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode()
_LAST_EVENT_HEADER = LAST_EVENT_ID_HEADER.encode()
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode()


class Listener(Protocol):
    def listening(self, session_id: str, on: bool) -> None:
        """A session's GET stream opened (``on``) or closed; called on the server's loop."""


class HttpSessions:
    """ASGI middleware around the SDK's streamable HTTP app (see the module docstring)."""

    def __init__(
        self, app: ASGIApp, *, store: MemoryEventStore | None, listener: Listener | None
    ) -> None:
        self.app = app
        self.store = store
        self.listener = listener
        self._scopes: weakref.WeakValueDictionary[str, SessionScope] = weakref.WeakValueDictionary()
        self._open: Counter[str] = Counter()  # GET streams open, by session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or modern_request(scope):
            await self.app(scope, receive, send)
            return
        headers = _first_headers(scope)
        raw_id = headers.get(_SESSION_HEADER)
        session_id = raw_id.decode("latin-1") if raw_id is not None else None
        if session_id is None:
            await self._opening(scope, receive, send)
            return
        # An unknown id gets a throwaway scope: the SDK answers it 404.
        token = SESSION.set(self._scopes.get(session_id) or SessionScope())
        try:
            if scope.get("method") == "GET" and self._standalone(headers):
                resuming = _LAST_EVENT_HEADER in headers
                await self._get_stream(session_id, scope, receive, send, resuming)
            else:
                await self.app(scope, receive, send)
        finally:
            SESSION.reset(token)

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = SessionScope()

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_HEADER:
                        session.session_id = value.decode("latin-1")
                        self._scopes[session.session_id] = session
            await send(message)

        token = SESSION.set(session)
        try:
            await self.app(scope, receive, named)
        finally:
            SESSION.reset(token)

    def _standalone(self, headers: dict[bytes, bytes]) -> bool:
        """Whether a GET opens (or resumes) the session's standalone stream, not a POST's."""
        last = headers.get(_LAST_EVENT_HEADER)
        if last is None:
            return True
        store = self.store
        return store is not None and store.stream_of(last.decode("latin-1")) == GET_STREAM_KEY

    async def _get_stream(
        self, session_id: str, scope: Scope, receive: Receive, send: Send, resuming: bool
    ) -> None:
        # A resumed stream takes over from the replay only after the transport's
        # priming event (2025-11-25 on): a notice sent before that would be
        # stored but not sent, so the session counts as listening from there.
        primed = resuming and _primes(scope)
        started = opened = False

        async def watched(message: Message) -> None:
            nonlocal started, opened
            await send(message)
            if opened:
                return
            if message["type"] == "http.response.start":
                started = message["status"] == 200
                opened = started and not primed
            elif message["type"] == "http.response.body" and started:
                opened = _is_priming(message.get("body", b""))
            if opened:
                self._open[session_id] += 1
                if self.listener is not None:
                    self.listener.listening(session_id, True)

        try:
            await self.app(scope, receive, watched)
        finally:
            if opened:
                self._open[session_id] -= 1
                if self._open[session_id] <= 0:
                    del self._open[session_id]
                    if self.listener is not None:
                        self.listener.listening(session_id, False)


def modern_request(scope: Scope) -> bool:
    """Whether the SDK serves this request in the 2026-07-28 era: no session, no event store.

    Its rule, as ``StreamableHTTPSessionManager`` routes: the first
    ``MCP-Protocol-Version`` header names a version the handshake does not know.
    """
    for name, value in scope["headers"]:
        if name == _VERSION_HEADER:
            return value.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS
    return False


def _first_headers(scope: Scope) -> dict[bytes, bytes]:
    """Each header's first value, as the SDK reads them (Starlette's ``headers.get``).

    A request may repeat a header: read as its last value, two ``Mcp-Session-Id``
    headers let token B's GET stream on its own session (the first, which the
    SDK checks and serves) count here as token A's session listening.
    """
    headers: dict[bytes, bytes] = {}
    for name, value in scope.get("headers", ()):
        headers.setdefault(name, value)
    return headers


def _primes(scope: Scope) -> bool:
    """Whether the transport sends a priming event on this request's stream."""
    raw = _first_headers(scope).get(_VERSION_HEADER)
    version = raw.decode("latin-1") if raw is not None else DEFAULT_NEGOTIATED_VERSION
    return is_version_at_least(version, "2025-11-25")


def _is_priming(body: bytes) -> bool:
    """An SSE event with an id and no data: the transport's priming event."""
    has_id = has_data = False
    for line in body.replace(b"\r\n", b"\n").split(b"\n"):
        name, _, value = line.partition(b":")
        has_id = has_id or name == b"id"
        has_data = has_data or (name == b"data" and bool(value.strip()))
    return has_id and not has_data
