"""The streamable HTTP transport's event store: what a client that reconnects has missed.

The SDK writes every message it sends on an SSE stream here first (the GET
stream's change notices, a POST's notices and response), and a client that
reconnects with ``Last-Event-ID`` gets the events stored after that one. The
store is in memory and bounded, so a client that never comes back costs
little:

- each stream keeps its last ``per_stream`` events (1,000);
- the store keeps at most ``max_events`` events in all (100,000), and at
  most ``max_bytes`` of them (32 MiB of JSON), dropping the oldest first; the
  newest event is kept whatever its size, so the store holds at most
  ``max_bytes`` plus one message;
- a POST's stream is finished once its response is stored; only the last
  ``max_finished`` finished streams are kept (1,000), since a result can be
  large and a client resumes a POST only if it dropped before the response.

Event ids are random (``secrets.token_urlsafe``, 128 bits each): one id
tells nothing about another, so an id cannot be guessed from the ones a
client has seen. The order of events, which a replay needs, is a counter
the store keeps to itself; an id from an earlier server run is simply
unknown.

The SDK hands every session the same store and names streams by the
session's own ids (``_GET_stream`` in each session, a request id that every
client starts at 1). ``HttpSessions`` (``sessions.py``) tells the store which
session a request belongs to through ``SESSION``, so each session's streams
are its own, a session can replay only its own events, and a session's
events go when the session does (streams are held by the session's scope
object, weakly). Without that middleware all sessions share one scope, as in
the SDK's own example store.
"""

from __future__ import annotations

import itertools
import secrets
import weakref
from collections import deque
from contextvars import ContextVar
from typing import Final

from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse

__all__ = ["SESSION", "MemoryEventStore", "SessionScope"]

PER_STREAM: Final = 1_000
MAX_EVENTS: Final = 100_000
MAX_FINISHED: Final = 1_000


class SessionScope:
    """One HTTP session's identity for the store (``session_id`` once the SDK has minted it)."""

    __slots__ = ("__weakref__", "session_id")

    def __init__(self) -> None:
        self.session_id: str | None = None


SESSION: ContextVar[SessionScope | None] = ContextVar("agent_presets_http_session", default=None)
"""The session of the HTTP request being served; set by ``HttpSessions``."""

_UNSCOPED: Final = SessionScope()

MAX_BYTES: Final = 32 * 1024 * 1024

_Event = tuple[int, EventId, JSONRPCMessage | None]
"""One stored event: its place in the store's order, its id, its message."""
_Where = tuple["weakref.ref[SessionScope]", StreamId]
_ANSWERS: Final = (JSONRPCResponse, JSONRPCError)


class MemoryEventStore(EventStore):
    """The SDK's ``EventStore``, in memory, bounded (see the module docstring)."""

    def __init__(
        self,
        *,
        per_stream: int = PER_STREAM,
        max_events: int = MAX_EVENTS,
        max_finished: int = MAX_FINISHED,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        if min(per_stream, max_events, max_finished, max_bytes) < 1:
            raise ValueError("every bound of the event store must be at least 1")
        self.per_stream = per_stream
        self.max_events = max_events
        self.max_bytes = max_bytes
        # Each stored event's size (its JSON) by its place in the order, and their sum:
        # an event leaves both when it leaves the store, whichever bound drops it.
        self._sizes: dict[int, int] = {}
        self._bytes = 0
        self._seq = itertools.count(1)  # the order of events; never on the wire
        self._scopes: weakref.WeakKeyDictionary[SessionScope, dict[StreamId, deque[_Event]]] = (
            weakref.WeakKeyDictionary()
        )
        # Every stored event in order: the oldest goes first when the store is full.
        self._order: deque[tuple[EventId, _Where]] = deque()
        self._where: dict[EventId, tuple[int, _Where]] = {}
        self._finished: deque[_Where] = deque(maxlen=max_finished)
        # The last scope that stored an event (weakly) with its streams: consecutive events
        # are mostly one session's, and a WeakKeyDictionary lookup makes a weakref each time.
        self._last: tuple[weakref.ref[SessionScope], dict[StreamId, deque[_Event]]] | None = None

    # No __len__: the SDK tests ``if event_store:``, and an empty store must still count.
    def event_count(self) -> int:
        return sum(len(d) for streams in self._scopes.values() for d in streams.values())

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        scope = _current()
        seq = next(self._seq)
        event_id = secrets.token_urlsafe(16)
        last = self._last
        if last is not None and last[0]() is scope:
            ref, streams = last
        else:
            streams = self._scopes.setdefault(scope, {})
            ref = weakref.ref(scope)
            self._last = (ref, streams)
        events = streams.get(stream_id)
        if events is None:
            events = streams[stream_id] = deque(maxlen=self.per_stream)
        if len(events) == events.maxlen:  # the deque drops its oldest: so do the bytes
            # (its id still resolves, so a replay from it sends what the stream kept)
            self._bytes -= self._sizes.pop(events[0][0], 0)
        events.append((seq, event_id, message))
        # Measured as the SDK writes it on the stream (the same flags).
        size = (
            0
            if message is None
            else len(message.model_dump_json(by_alias=True, exclude_unset=True))
        )
        self._sizes[seq] = size
        self._bytes += size
        where = (ref, stream_id)
        self._where[event_id] = (seq, where)
        self._order.append((event_id, where))
        # A POST's stream ends with its answer (an error without an id goes to the GET stream).
        if stream_id != GET_STREAM_KEY and isinstance(message, _ANSWERS):
            if len(self._finished) == self._finished.maxlen:
                self._drop_stream(self._finished[0])
            self._finished.append(where)
        while len(self._order) > self.max_events or (
            self._bytes > self.max_bytes and len(self._order) > 1
        ):
            old, (ref, sid) = self._order.popleft()
            self._forget(old)
            old_events = self._streams(ref).get(sid)
            if old_events and old_events[0][1] == old:
                old_events.popleft()
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._where.get(last_event_id)
        if found is None:
            return None
        seq, (ref, stream_id) = found
        if ref() is not _current():  # another session's event: as if unknown
            return None
        for event_seq, event_id, message in list(self._streams(ref).get(stream_id, ())):
            if event_seq > seq and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id

    def stream_of(self, event_id: str) -> StreamId | None:
        """The stream (of the current session) that ``event_id`` belongs to, if still stored."""
        found = self._where.get(event_id)
        if found is None or found[1][0]() is not _current():
            return None
        return found[1][1]

    def _streams(self, ref: weakref.ref[SessionScope]) -> dict[StreamId, deque[_Event]]:
        last = self._last
        if last is not None and last[0] is ref:
            return last[1]
        scope = ref()
        return self._scopes.get(scope, {}) if scope is not None else {}

    def _drop_stream(self, where: _Where) -> None:
        ref, stream_id = where
        events = self._streams(ref).pop(stream_id, None)
        for _seq, event_id, _message in events or ():
            self._forget(event_id)

    def _forget(self, event_id: EventId) -> None:
        """Event ``event_id`` is no longer stored: it no longer resolves, nor counts."""
        found = self._where.pop(event_id, None)
        if found is not None:
            self._bytes -= self._sizes.pop(found[0], 0)


def _current() -> SessionScope:
    scope = SESSION.get()
    return scope if scope is not None else _UNSCOPED
