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

from agent_presets.mcpserver.eventstore import SESSION, MemoryEventStore, SessionScope

__all__ = ["HttpSessions", "Listener"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SESSION_HEADER = MCP_SESSION_ID_HEADER.encode()
_LAST_EVENT_HEADER = LAST_EVENT_ID_HEADER.encode()


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
        self._open: Counter[str] = Counter()

    def is_listening(self, session_id: str) -> bool:
        return self._open[session_id] > 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", ()))
        raw_id = headers.get(_SESSION_HEADER)
        session_id = raw_id.decode("latin-1") if raw_id is not None else None
        if session_id is None:
            await self._opening(scope, receive, send)
            return
        # An unknown id gets a throwaway scope: the SDK answers it 404.
        token = SESSION.set(self._scopes.get(session_id) or SessionScope())
        try:
            if scope.get("method") == "GET" and self._standalone(headers):
                await self._get_stream(session_id, scope, receive, send)
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
        self, session_id: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        opened = False

        async def watched(message: Message) -> None:
            nonlocal opened
            await send(message)
            if message["type"] == "http.response.start" and message["status"] == 200 and not opened:
                opened = True
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
