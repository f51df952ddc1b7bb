"""The HTTP transport's event store: bounded, and each session's events are its own."""

from __future__ import annotations

import gc
import re

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.streamable_http import GET_STREAM_KEY, EventMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCResponse,
)

from agent_presets.server.mcp.eventstore import SESSION, MemoryEventStore, SessionScope

pytestmark = pytest.mark.anyio


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method=f"notifications/n{n}")


def answer(request_id: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={})


async def replay_events(
    store: MemoryEventStore, last: str
) -> tuple[str | None, list[tuple[str, JSONRPCMessage]]]:
    """The stream of ``last`` and the (id, message) of every event replayed after it."""
    got: list[EventMessage] = []

    async def collect(event: EventMessage) -> None:
        got.append(event)

    stream = await store.replay_events_after(last, collect)
    return stream, [(e.event_id, e.message) for e in got]


async def replay(store: MemoryEventStore, last: str) -> tuple[str | None, list[JSONRPCMessage]]:
    stream, events = await replay_events(store, last)
    return stream, [message for _, message in events]


def methods(messages: list[JSONRPCMessage]) -> list[str]:
    return [getattr(m, "method", "answer") for m in messages]


async def test_replay_sends_what_came_after_the_last_event_on_that_stream() -> None:
    store = MemoryEventStore()
    first = await store.store_event(GET_STREAM_KEY, note(1))
    await store.store_event("7", note(99))  # another stream of the same session
    await store.store_event(GET_STREAM_KEY, note(2))
    await store.store_event(GET_STREAM_KEY, note(3))
    stream, messages = await replay(store, first)
    assert stream == GET_STREAM_KEY
    assert methods(messages) == ["notifications/n2", "notifications/n3"]


async def test_priming_events_are_ids_only_never_replayed() -> None:
    store = MemoryEventStore()
    priming = await store.store_event("1", None)
    await store.store_event("1", answer(1))
    stream, messages = await replay(store, priming)
    assert stream == "1"
    assert methods(messages) == ["answer"]


@pytest.mark.parametrize("last", ["", "nonsense", "00000000-1", "-1"])
async def test_an_unknown_event_id_replays_nothing(last: str) -> None:
    store = MemoryEventStore()
    await store.store_event(GET_STREAM_KEY, note(1))
    assert await replay(store, last) == (None, [])


async def test_each_stream_keeps_its_last_events_only() -> None:
    store = MemoryEventStore(per_stream=3)
    first = await store.store_event(GET_STREAM_KEY, note(0))
    for n in range(1, 6):
        await store.store_event(GET_STREAM_KEY, note(n))
    assert store.event_count() == 3
    # The client's last event was dropped: it gets what is still kept.
    _, messages = await replay(store, first)
    assert methods(messages) == [f"notifications/n{n}" for n in (3, 4, 5)]


async def test_the_store_drops_its_oldest_events_first_when_full() -> None:
    store = MemoryEventStore(max_events=4)
    ids = [await store.store_event(f"s{n % 2}", note(n)) for n in range(6)]
    assert store.event_count() == 4
    assert await replay(store, ids[0]) == (None, [])
    _, messages = await replay(store, ids[2])
    assert methods(messages) == ["notifications/n4"]


async def test_only_the_last_finished_request_streams_are_kept() -> None:
    store = MemoryEventStore(max_finished=2)
    primings = []
    for request_id in range(4):
        primings.append(await store.store_event(str(request_id), None))
        await store.store_event(str(request_id), answer(request_id))
    assert [await replay(store, p) for p in primings[:2]] == [(None, [])] * 2
    assert [(await replay(store, p))[0] for p in primings[2:]] == ["2", "3"]


async def test_sessions_share_stream_names_but_never_events() -> None:
    store = MemoryEventStore()
    alice, bob = SessionScope(), SessionScope()
    token = SESSION.set(alice)
    alice_first = await store.store_event(GET_STREAM_KEY, note(1))
    SESSION.reset(token)
    token = SESSION.set(bob)
    await store.store_event(GET_STREAM_KEY, note(2))
    # Bob presents Alice's event id: unknown to him.
    assert await replay(store, alice_first) == (None, [])
    assert store.stream_of(alice_first) is None
    SESSION.reset(token)
    token = SESSION.set(alice)
    try:
        assert await replay(store, alice_first) == (GET_STREAM_KEY, [])
        assert store.stream_of(alice_first) == GET_STREAM_KEY
    finally:
        SESSION.reset(token)


async def test_a_sessions_events_go_when_the_session_does() -> None:
    store = MemoryEventStore()
    scope = SessionScope()
    token = SESSION.set(scope)
    await store.store_event(GET_STREAM_KEY, note(1))
    SESSION.reset(token)
    assert store.event_count() == 1
    del scope
    gc.collect()
    assert store.event_count() == 0


def test_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MemoryEventStore(per_stream=0)


def test_an_empty_store_is_still_a_store() -> None:
    # The SDK enables resumability with ``if event_store:``.
    assert MemoryEventStore()


async def test_an_error_without_id_on_the_get_stream_does_not_finish_it() -> None:
    store = MemoryEventStore(max_finished=1)
    first = await store.store_event(GET_STREAM_KEY, note(1))
    parse_error = ErrorData(code=-32700, message="Parse error")
    error = JSONRPCError(jsonrpc="2.0", id=None, error=parse_error)
    await store.store_event(GET_STREAM_KEY, error)
    await store.store_event("1", answer(1))
    await store.store_event("2", answer(2))
    stream, messages = await replay(store, first)
    assert stream == GET_STREAM_KEY and len(messages) == 1


async def test_event_ids_are_random_not_a_counter() -> None:
    store = MemoryEventStore()
    ids = [await store.store_event(GET_STREAM_KEY, note(n)) for n in range(20)]
    assert len(set(ids)) == len(ids)
    # 128 random bits each; no shared prefix, no number to count on from.
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids), ids
    assert len({i[:4] for i in ids}) == len(ids), ids
    # A neighbour's id is no more known to the store than any other made-up one.
    _, messages = await replay(store, ids[0])
    assert len(messages) == 19


STREAMS = [GET_STREAM_KEY, "1", "2"]


@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from(STREAMS)), min_size=1, max_size=30))
def test_a_replay_sends_exactly_what_its_session_stored_after_on_that_stream(
    writes: list[tuple[int, str]],
) -> None:
    """Whatever the interleaving: the events after the id, on its stream, in order, with ids."""

    async def check() -> None:
        store = MemoryEventStore()
        scopes = [SessionScope(), SessionScope()]
        stored: list[tuple[int, str, str, JSONRPCMessage]] = []
        for n, (who, stream) in enumerate(writes):
            token = SESSION.set(scopes[who])
            try:
                message = note(n)
                stored.append((who, stream, await store.store_event(stream, message), message))
            finally:
                SESSION.reset(token)
        for k, (who, stream, last, _) in enumerate(stored):
            expected = [(i, m) for w, s, i, m in stored[k + 1 :] if (w, s) == (who, stream)]
            for reader in (0, 1):
                token = SESSION.set(scopes[reader])
                try:
                    found, got = await replay_events(store, last)
                finally:
                    SESSION.reset(token)
                if reader == who:
                    assert found == stream and got == expected
                else:
                    assert found is None and got == []

    anyio.run(check)
