"""Carry change notices from any thread to every connected MCP client.

The tool registry and the preset manager call their listeners synchronously,
from whatever thread made the change: a tool call in the server's worker
thread, a host's UI thread, a test. ``ChangeFanout.changed`` only records the
change and wakes the server's event loop; one flush task on the loop then
tells every client, in both protocol eras:

- legacy (handshake) connections get ``notifications/*/list_changed``, and
  ``notifications/resources/updated`` for URIs they subscribed, on the
  connection's standalone channel once initialized: stdio's pipe, streamable
  HTTP's GET stream (the transport's event store keeps what a closed GET
  stream missed, for a client that resumes it with ``Last-Event-ID``);
- a legacy HTTP session also hears on its requests' response streams: what
  changed while one of its requests was in flight goes out on that request's
  stream before its answer (so a client that only POSTs hears the switches it
  makes itself), and what it could not hear (no GET stream open, or not yet
  initialized) goes out on its next response stream or when its GET stream
  opens, whichever comes first; a ``tools/list`` answer settles ``tools``;
- ``resources`` (the active presets list other resources) goes out as
  ``notifications/resources/list_changed``, and ``ResourcesListChanged`` on
  a listen stream;
- modern (2026-07-28) clients get the same events on their
  ``subscriptions/listen`` streams through the subscription bus.

Changes that arrive while a flush is pending merge into it: list-changed
notices are level triggers ("refetch"), so one notice covers a burst, and a
client may hear one change twice (on its GET stream and its response stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets.lib.principal import LOCAL
from agent_presets.server.mcp.auth import principal_of
from agent_presets.server.principals import EVERYONE, Audience

log = logging.getLogger("agent_presets.server")

Kind = Literal["tools", "context", "resources"]
"""``tools``: the tool list changed. ``context``: the active presets changed
(prompt fragments and the status resources). ``resources``: the resource list
changed (a server whose resources come and go calls ``changed("resources")``)."""

SEND_TIMEOUT: Final = 5.0
"""Seconds one client may take to accept a notice before it is dropped from the fan-out."""

SETTLE_TIMEOUT: Final = 5.0


@dataclass(eq=False)
class _Peer:
    """A legacy-era connection that can hear server-initiated notices.

    A peer is known from its ``initialize`` on, but hears notices only once
    it has finished the handshake (``notifications/initialized`` or a later
    request); what changes in between, or while it cannot hear its standalone
    channel, is kept in ``unheard`` and sent as soon as it can hear, so a
    client never misses a change made while it was connecting.
    """

    session: ServerSession
    session_id: str | None = None
    """The streamable HTTP session's id; ``None`` for a stdio or in-memory connection."""
    principal: str = LOCAL
    """Who opened the session; it hears only the changes of what that principal is served."""
    ready: bool = False
    busy: int = 0
    """Requests of this HTTP session in flight: their response streams carry what changes."""
    unheard: set[Kind] = field(default_factory=set)
    resources: set[str] = field(default_factory=set)
    stable: bool | None = None
    """Served ``stable`` (``delivery.py``): told of a tools change only when its list
    changed. None until its first request after ``initialize`` says who the client is."""
    tools_seen: int | None = None
    """The version of its stable list it last listed or heard of."""


class ChangeFanout:
    """Records changes from any thread; delivers them from the server's event loop.

    Each change has an audience (``Audience``): the principals whose served
    lists it may have changed. A legacy connection hears it when the
    principal that opened it is in the audience; a listen stream, when its
    principal's (each principal's streams share one subscription bus).
    """

    def __init__(self, resource_uris: Iterable[str]) -> None:
        self._buses: dict[str, tuple[SubscriptionBus, ListenHandler]] = {}
        self._resource_uris = tuple(resource_uris)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_users = 0
        self._pending: dict[Kind, list[Audience]] = {}
        self._scheduled = False
        # Touched only on the loop thread:
        self._peers: dict[object, _Peer] = {}
        self._listening: set[str] = set()
        self.tracks_streams = False
        """Whether ``listening`` is told which HTTP sessions have their GET stream open.

        Until something does (``HttpSessions``), every HTTP session counts as listening."""
        self._waiters: list[asyncio.Future[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        # Stable delivery (delivery.py): who is served stable, and their lists' versions.
        self.stable_of: Callable[[ServerRequestContext[Any, Any]], bool] = _never
        self.stable_principal: Callable[[str], bool] = _never
        self.tools_version: Callable[[str], int | None] = _no_version
        self._bus_seen: dict[str, int | None] = {}

    # -- listen streams, by principal ------------------------------------------

    def listen_handler(self, principal: str) -> ListenHandler:
        """The handler of ``principal``'s listen streams (made on first use)."""
        held = self._buses.get(principal)
        if held is None:
            bus = InMemorySubscriptionBus()
            held = self._buses[principal] = (bus, ListenHandler(bus))
            self._bus_seen[principal] = self.tools_version(principal)
        return held[1]

    def close_listen_streams(self) -> None:
        for _bus, handler in list(self._buses.values()):
            handler.close()

    # -- the loop ----------------------------------------------------------

    def attach_loop(self) -> None:
        """Deliver on the running loop (called when the server starts serving)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._loop is not loop:
                if self._loop is not None:
                    log.warning("the MCP server moved to another event loop; notices follow it")
                self._loop = loop
                self._loop_users = 0
                self._pending.clear()
                self._scheduled = False
            self._loop_users += 1

    def detach_loop(self) -> None:
        with self._lock:
            self._loop_users -= 1
            if self._loop_users <= 0:
                self._loop = None
                self._loop_users = 0

    # -- recording changes (any thread) --------------------------------------

    def changed(self, kind: Kind, audience: Audience = EVERYONE) -> None:
        with self._lock:
            self._pending.setdefault(kind, []).append(audience)
            loop = self._loop
            if self._scheduled or loop is None:
                return
            self._scheduled = True
        try:
            loop.call_soon_threadsafe(self._start_flush)
        except RuntimeError:  # the loop has closed: nobody is connected any more
            with self._lock:
                self._scheduled = False

    @property
    def pending(self) -> bool:
        return self._scheduled

    # -- delivering (loop thread) -------------------------------------------

    def _start_flush(self) -> None:
        task = asyncio.get_running_loop().create_task(self._flush())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self) -> None:
        drained = False
        try:
            while True:
                with self._lock:
                    kinds, self._pending = self._pending, {}
                    if not kinds:
                        self._scheduled = False
                        drained = True
                        break
                try:
                    await self._deliver(kinds)
                except Exception:
                    log.exception("delivering a change notice failed")
        finally:
            if not drained:  # cancelled: hand what is left to a fresh task
                with self._lock:
                    self._scheduled = False
                    if self._pending and self._loop is not None:
                        with contextlib.suppress(RuntimeError):
                            self._loop.call_soon(self._start_flush)
                            self._scheduled = True
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def settle(self) -> None:
        """Wait until changes recorded so far have gone out (bounded).

        A tool call that changed the tool list awaits this before answering, so
        a client reads ``list_changed`` before the result that caused it.
        """
        if not self._scheduled:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        with anyio.move_on_after(SETTLE_TIMEOUT):
            await waiter

    async def _deliver(self, pending: dict[Kind, list[Audience]]) -> None:
        ready = []
        for key, peer in list(self._peers.items()):
            kinds = _kinds_for(pending, peer.principal)
            if not kinds:
                continue
            if not peer.ready:
                peer.unheard |= kinds
                continue
            if peer.busy or not self._hears(peer):
                # Its own request may have caused this, or it may not be listening:
                # its next response stream (or its GET stream, when it opens) says so.
                peer.unheard |= kinds
            # Sent even to an HTTP session that is not listening: the transport's event
            # store keeps it for a client that resumes its GET stream (Last-Event-ID).
            ready.append((key, peer, kinds))
        if ready:
            async with anyio.create_task_group() as tg:
                for key, peer, kinds in ready:
                    tg.start_soon(self._notify_peer, key, peer, kinds)
        for principal, (bus, _handler) in list(self._buses.items()):
            kinds = _kinds_for(pending, principal)
            if "tools" in kinds and self.stable_principal(principal):
                moved, self._bus_seen[principal] = self._tools_news(
                    principal, self._bus_seen.get(principal)
                )
                if not moved:
                    kinds.discard("tools")
            for event in self._events(kinds):
                await bus.publish(event)

    def _events(self, kinds: set[Kind]) -> list[ServerEvent]:
        events: list[ServerEvent] = []
        if "tools" in kinds:
            events.append(ToolsListChanged())
        if "context" in kinds:
            events.append(PromptsListChanged())
            events.extend(ResourceUpdated(uri=uri) for uri in self._resource_uris)
        if "resources" in kinds:
            events.append(ResourcesListChanged())
        return events

    def _hears(self, peer: _Peer) -> bool:
        """Whether ``peer`` hears its standalone channel now."""
        return (
            peer.session_id is None or not self.tracks_streams or peer.session_id in self._listening
        )

    def _notes(self, peer: _Peer, kinds: set[Kind]) -> list[types.ServerNotification]:
        notes: list[types.ServerNotification] = []
        if "tools" in kinds and self._tools_moved(peer):
            notes.append(types.ToolListChangedNotification())
        if "context" in kinds:
            notes.append(types.PromptListChangedNotification())
            notes.extend(
                types.ResourceUpdatedNotification(
                    params=types.ResourceUpdatedNotificationParams(uri=uri)
                )
                for uri in self._resource_uris
                if uri in peer.resources
            )
        if "resources" in kinds:
            notes.append(types.ResourceListChangedNotification())
        return notes

    def _tools_moved(self, peer: _Peer) -> bool:
        """Whether ``peer`` is to hear of a tools change: always when live; when stable,
        only if its list's version moved since it last listed or heard (its own calls
        never move it)."""
        if not peer.stable:
            return True
        moved, peer.tools_seen = self._tools_news(peer.principal, peer.tools_seen)
        return moved

    def _tools_news(self, principal: str, seen: int | None) -> tuple[bool, int | None]:
        """Whether ``principal``'s stable list moved since version ``seen``, and its version
        now: the one rule for legacy connections and listen streams alike."""
        version = self.tools_version(principal)
        return version != seen, version

    async def _notify_peer(self, key: object, peer: _Peer, kinds: set[Kind]) -> None:
        """Tell ``peer`` on its standalone channel."""
        try:
            with anyio.fail_after(SEND_TIMEOUT):
                for note in self._notes(peer, kinds):
                    await peer.session.send_notification(note)
        except Exception as exc:  # a closed or stuck client leaves the fan-out
            log.debug("dropping an MCP client from change notices: %r", exc)
            self._peers.pop(key, None)

    async def _tell_unheard(self, key: object, peer: _Peer) -> None:
        if peer.unheard and self._hears(peer):
            unheard, peer.unheard = peer.unheard, set()
            await self._notify_peer(key, peer, unheard)

    async def _answer_with_unheard(self, peer: _Peer, ctx: ServerRequestContext[Any, Any]) -> None:
        """Send what ``peer`` has not heard on the stream that carries ``ctx``'s answer."""
        unheard, peer.unheard = peer.unheard, set()
        try:
            with anyio.fail_after(SEND_TIMEOUT):
                for note in self._notes(peer, unheard):
                    await ctx.session.send_notification(note, related_request_id=ctx.request_id)
        except Exception as exc:  # the client went; its next request or stream hears it
            log.debug("a change notice on a response stream failed: %r", exc)
            peer.unheard |= unheard

    # -- legacy connections ---------------------------------------------------

    async def track(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Server middleware: follow each legacy connection from its handshake on."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        peer = self._add_peer(ctx.session, ctx)
        if peer is None:
            return await call_next(ctx)
        if ctx.method == "initialize":
            return await call_next(ctx)
        if peer.stable is None:  # the handshake is done: the client has said who it is
            peer.stable = self.stable_of(ctx)
            peer.tools_seen = self.tools_version(peer.principal)
        # An HTTP request's own stream can carry notices; a notification has none.
        answered = peer.session_id is not None and ctx.request_id is not None
        if ctx.method == "tools/list":
            peer.unheard.discard("tools")  # its answer is the news
        if answered:
            peer.busy += 1
        try:
            result = await call_next(ctx)
        finally:
            if answered:
                peer.busy -= 1
        if ctx.method == "tools/list" and peer.stable:
            peer.tools_seen = self.tools_version(peer.principal)  # what it was just given
        if not peer.ready:
            peer.ready = True
            await self._tell_unheard(self._key(ctx.session), peer)
        if answered and peer.unheard:
            await self._answer_with_unheard(peer, ctx)
        return result

    def listening(self, session_id: str, on: bool) -> None:
        """An HTTP session's GET stream opened or closed (``HttpSessions`` calls this)."""
        if not on:
            self._listening.discard(session_id)
            return
        self._listening.add(session_id)
        for key, peer in list(self._peers.items()):
            if peer.session_id == session_id and peer.ready and peer.unheard:
                # A task, so the transport has put the stream in place before it sends.
                task = asyncio.get_running_loop().create_task(self._tell_unheard(key, peer))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    def subscribe(self, ctx: ServerRequestContext[Any, Any], uri: str, on: bool) -> None:
        """``resources/subscribe`` / ``unsubscribe`` from a legacy connection."""
        peer = self._add_peer(ctx.session, ctx)
        if peer is not None:
            (peer.resources.add if on else peer.resources.discard)(uri)

    @property
    def peer_count(self) -> int:
        return len(self._peers)

    @staticmethod
    def _key(session: ServerSession) -> object:
        # The SDK keeps the connection behind the per-request session; it is
        # the one stable identity of a client and owns the teardown stack.
        connection = getattr(session, "_connection", None)
        return connection if connection is not None else session

    def _add_peer(
        self, session: ServerSession, ctx: ServerRequestContext[Any, Any] | None = None
    ) -> _Peer | None:
        key = self._key(session)
        peer = self._peers.get(key)
        if peer is not None:
            return peer
        if isinstance(key, Connection):
            if not key.has_standalone_channel:
                return None
            key.exit_stack.callback(self._peers.pop, key, None)
        session_id = key.session_id if isinstance(key, Connection) else None
        peer = _Peer(session, session_id, LOCAL if ctx is None else principal_of(ctx))
        self._peers[key] = peer
        return peer


def _never(_: Any) -> bool:
    return False


def _no_version(_: str) -> int | None:
    return None


def _kinds_for(pending: Mapping[Kind, list[Audience]], principal: str) -> set[Kind]:
    """The kinds of change whose audience includes ``principal``."""
    return {
        kind for kind, audiences in pending.items() if any(a.includes(principal) for a in audiences)
    }
