"""Room for a new HTTP session, always: at the limit, an idle session makes way.

The SDK holds at most ``max_sessions`` legacy sessions and answers every
``initialize`` beyond that with ``503 Too many open sessions``, until a
session is deleted or idles out (30 minutes). So 10,050 ``initialize``s in
34 s, and nothing after them, locked every new client out for half an hour.

``SessionLimit`` wraps the SDK's app and keeps the same count itself. When
a request would open a session past ``max_sessions``, it first ends one idle
session (one with no request in flight and no GET stream open), as if its
client had sent ``DELETE``. The session chosen is:

1. one of the client that holds the most sessions, so a flood ends its own
   sessions, not other clients' (a client is its bearer token's name, else
   its address: on loopback without tokens, every session is one client's);
2. within it, a session that never sent anything after its ``initialize``
   (as a flood's do), before one that did;
3. then the one idle the longest.

A session that is busy is never ended: only when every session is busy does
the new client get the SDK's ``503``. An ended session's client gets ``404``
on its next request, which MCP's streamable HTTP transport answers with a
new ``initialize``.

A session that sent nothing after its ``initialize`` (not even the
``notifications/initialized`` every client sends at once) for
``unused_timeout`` seconds (``UNUSED_SECONDS``, a minute) is ended as well,
limit or not: the SDK would keep it for its 30 idle minutes. A sweep runs a
second after such a session's time is up, and before any request once it is.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from agent_presets.server.mcp.auth import SCOPE_KEY
from agent_presets.server.mcp.sessions import modern_request

__all__ = ["MAX_SESSIONS", "UNUSED_SECONDS", "SessionLimit"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_SESSIONS: Final = 1_000
"""Legacy HTTP sessions open at once. Each holds about 45 KiB (measured with mcp 2.3),
so the SDK's own default (10,000) lets a flood take some 450 MB; with idle sessions
making way, a lower limit locks no one out."""

UNUSED_SECONDS: Final = 60.0
"""How long a session that sent nothing after its ``initialize`` is kept (the SDK: 30 min)."""

SWEEP_SLACK: Final = 1.0
"""Seconds a sweep waits past the time it is due (sessions due together go together)."""

log = logging.getLogger("agent_presets.server")

_SESSION_HEADER: Final = MCP_SESSION_ID_HEADER.lower().encode()
_VERSION_HEADER: Final = MCP_PROTOCOL_VERSION_HEADER.lower().encode()
# Left off the DELETE that ends a session: it has no body, and the SDK checks
# a version header against the versions it serves (absent, it assumes one).
_NOT_COPIED: Final = frozenset(
    {b"content-type", b"content-length", _SESSION_HEADER, _VERSION_HEADER}
)


@dataclass(eq=False)
class _Session:
    id: str
    client: str
    opening: Scope
    """The opening request's scope as it came in: its DELETE passes the checks it passed."""
    last: float
    busy: int = 0
    used: bool = False
    opened: float = 0.0


class SessionLimit:
    """ASGI middleware around the SDK's streamable HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT,
        unused_timeout: float = UNUSED_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if unused_timeout <= 0:
            raise ValueError(f"unused_timeout must be positive, got {unused_timeout}")
        self.app = app
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.unused_timeout = unused_timeout
        self._clock = clock
        self._sweep_at: float | None = None
        """When the next sweep of unused sessions is due (None: none is waiting)."""
        self._sweeper: asyncio.TimerHandle | None = None
        self._sessions: dict[str, _Session] = {}
        # Opening requests being served: the SDK counts their sessions already.
        self._opening_now = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or modern_request(scope):  # no session to count
            await self.app(scope, receive, send)
            return
        if self._sweep_at is not None and self._clock() >= self._sweep_at:
            await self._end_unused()
        raw = next((v for k, v in scope.get("headers", ()) if k == _SESSION_HEADER), None)
        if raw is None:
            await self._opening(scope, receive, send)
            return
        session = self._sessions.get(raw.decode("latin-1"))
        if session is None:  # unknown (or already ended): the SDK answers it
            await self.app(scope, receive, send)
            return
        session.used = True
        session.busy += 1
        status = 0

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            session.busy -= 1
            # Deleted by its client, or gone on the SDK's side (idle, crashed).
            if (scope.get("method") == "DELETE" and status < 300) or status == 404:
                self._sessions.pop(session.id, None)
            session.last = self._clock()

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _opens_a_session(scope) and self._full():
            await self._make_room()
        opening = dict(scope)
        self._opening_now += 1
        counted = False

        async def named(message: Message) -> None:
            nonlocal counted
            if message["type"] == "http.response.start" and not counted:
                counted = True
                self._opening_now -= 1
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_HEADER and message["status"] < 400:
                        session_id = value.decode("latin-1")
                        now = self._clock()
                        self._sessions[session_id] = _Session(
                            session_id, _client(opening), opening, now, opened=now
                        )
                        self._sweep_later(now + self.unused_timeout)
            await send(message)

        try:
            await self.app(scope, receive, named)
        finally:
            if not counted:
                self._opening_now -= 1

    def _full(self) -> bool:
        if len(self._sessions) + self._opening_now < self.max_sessions:
            return False
        # Sessions the SDK has ended for idleness since: forget them first.
        stale = self._clock() - self.idle_timeout
        for session in [s for s in self._sessions.values() if not s.busy and s.last < stale]:
            del self._sessions[session.id]
        return len(self._sessions) + self._opening_now >= self.max_sessions

    async def _make_room(self) -> None:
        idle = [s for s in self._sessions.values() if not s.busy]
        if not idle:
            return  # every session is serving a request: the SDK refuses this one (503)
        held = Counter(s.client for s in self._sessions.values())
        victim = min(idle, key=lambda s: (-held[s.client], s.used, s.last))
        del self._sessions[victim.id]
        log.warning(
            "%d HTTP sessions are open (the limit): ending the idle session %s… of %s to make room",
            self.max_sessions,
            victim.id[:8],
            victim.client,
        )
        await self._end(victim)

    def _sweep_later(self, due: float) -> None:
        """Sweep unused sessions at ``due`` (and before any request after it)."""
        if self._sweep_at is not None and self._sweep_at <= due:
            return
        self._sweep_at = due
        if self._sweeper is not None:
            self._sweeper.cancel()
        loop = asyncio.get_running_loop()
        delay = max(0.0, due - self._clock()) + SWEEP_SLACK
        self._sweeper = loop.call_later(delay, lambda: loop.create_task(self._end_unused()))

    async def _end_unused(self) -> None:
        """End every session unused past ``unused_timeout``; plan the sweep of the next one."""
        self._sweeper = None
        self._sweep_at = None
        now = self._clock()
        due = now - self.unused_timeout
        waiting = [s for s in self._sessions.values() if not s.used and not s.busy]
        gone = [s for s in waiting if s.opened <= due]
        for session in gone:
            del self._sessions[session.id]
        if gone:
            log.warning(
                "ended %d HTTP sessions that sent nothing in the %g s after their initialize",
                len(gone),
                self.unused_timeout,
            )
        left = [s.opened for s in waiting if s.opened > due]
        if left:
            self._sweep_later(min(left) + self.unused_timeout)
        for session in gone:
            await self._end(session)

    async def _end(self, session: _Session) -> None:
        """Send the SDK the ``DELETE`` that ends ``session``, as its client would."""
        headers = [(k, v) for k, v in session.opening.get("headers", ()) if k not in _NOT_COPIED]
        headers.append((_SESSION_HEADER, session.id.encode("latin-1")))
        scope = {**session.opening, "method": "DELETE", "headers": headers}
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:  # the SDK does not read again; a disconnect if it ever does
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            pass

        await self.app(scope, receive, send)


def _opens_a_session(scope: Scope) -> bool:
    """Whether the SDK may open a legacy session for this request (a modern one never does)."""
    return scope.get("method") == "POST"


def _client(scope: Scope) -> str:
    """Who opened a session: its token's name, else its address."""
    token = scope.get(SCOPE_KEY)
    if isinstance(token, str):
        return f"token {token}"
    peer = scope.get("client")
    return str(peer[0]) if peer else "unknown"
