"""What raw HTTP clients hear of tool-list changes from `presets serve --transport http`.

Each client here is httpx speaking the legacy era by hand (``rawhttp``), so
the tests see the wire: which stream carries a notice, and in what order.
"""

from __future__ import annotations

import contextlib
import queue
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from .conftest import HttpServer, spawn_http, terminate
from .rawhttp import LIST_CHANGED, RawSession

CANVAS = {"surface": "canvas"}
SCENE = {"surface": "scene"}
SWITCH = "space_app_switch_surface"


@pytest.fixture
def sessions(http_server: HttpServer) -> Iterator[list[RawSession]]:
    opened: list[RawSession] = []
    yield opened
    for session in opened:
        session.close()


def connect(url: str, opened: list[RawSession], *, initialized: bool = True) -> RawSession:
    session = RawSession(url)
    opened.append(session)
    session.initialize(initialized=initialized)
    return session


def methods(events: list[Any]) -> list[str | None]:
    return [event.method for event in events]


def notices_before_answer(events: list[Any]) -> set[str | None]:
    """The notices on a response stream; the answer must come last, after them."""
    assert events[-1].method is None
    return set(methods(events[:-1]))


PROMPTS_CHANGED = "notifications/prompts/list_changed"


def test_a_raw_post_client_hears_its_own_switch_before_the_result(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    client = connect(http_server.url, sessions)
    client.answer("tools/list")
    events = client.call(SWITCH, CANVAS)
    # The active presets changed too, so their guidance (the prompt) did.
    assert notices_before_answer(events) == {LIST_CHANGED, PROMPTS_CHANGED}
    # Nothing changes on a second switch to where it already is: no notice.
    assert methods(client.call(SWITCH, CANVAS)) == [None]


def test_a_raw_post_client_hears_another_clients_switch_on_its_next_response(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    quiet, other = connect(http_server.url, sessions), connect(http_server.url, sessions)
    quiet.answer("tools/list")
    other.call(SWITCH, CANVAS)
    events = quiet.request("ping")
    assert notices_before_answer(events) == {LIST_CHANGED, PROMPTS_CHANGED}
    assert methods(quiet.request("ping")) == [None]  # told once


def test_a_tools_list_answer_settles_an_unheard_change(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    quiet, other = connect(http_server.url, sessions), connect(http_server.url, sessions)
    other.call(SWITCH, CANVAS)
    listed = quiet.request("tools/list")
    assert LIST_CHANGED not in methods(listed)
    names = [t["name"] for t in listed[-1].message["result"]["tools"]]
    assert "space_app_switch_surface" in names and "space_scene_add_cuboid" not in names
    # The prompt's change is still news; the tool list's is not.
    assert notices_before_answer(listed) == {PROMPTS_CHANGED}
    assert methods(quiet.request("ping")) == [None]


def test_a_get_stream_client_hears_a_change_another_client_makes(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    listener, other = connect(http_server.url, sessions), connect(http_server.url, sessions)
    stream = listener.open_get_stream()
    try:
        other.call(SWITCH, CANVAS)
        event = stream.next_method(LIST_CHANGED)
        assert event.id  # the event store numbers what it keeps
        # Heard on the GET stream, so not again on the next response.
        assert methods(listener.request("ping")) == [None]
    finally:
        stream.close()


def test_a_client_that_reconnects_with_last_event_id_gets_the_notice_it_missed(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    listener, other = connect(http_server.url, sessions), connect(http_server.url, sessions)
    stream = listener.open_get_stream()
    other.call(SWITCH, CANVAS)
    last = stream.next_method(LIST_CHANGED).id
    assert last is not None
    stream.close()  # the connection drops
    other.call(SWITCH, SCENE)  # a change while it is down
    resumed = listener.open_get_stream(last_event_id=last)
    try:
        event = resumed.next_method(LIST_CHANGED)
        assert event.id != last
        # The resumed stream goes on live (a repeat of what it missed may come first).
        with contextlib.suppress(queue.Empty):
            while True:
                resumed.next(timeout=2)
        other.call(SWITCH, CANVAS)
        resumed.next_method(LIST_CHANGED)
    finally:
        resumed.close()


def test_a_replay_never_crosses_sessions(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    first, second = connect(http_server.url, sessions), connect(http_server.url, sessions)
    stream = first.open_get_stream()
    second.call(SWITCH, CANVAS)
    last = stream.next_method(LIST_CHANGED).id
    stream.close()
    assert last is not None
    # The other session presents the first one's event id: nothing of the first's is replayed.
    foreign = second.open_get_stream(last_event_id=last)
    try:
        first.call(SWITCH, SCENE)
        with pytest.raises(queue.Empty):
            foreign.next(timeout=2)
    finally:
        foreign.close()


def test_a_change_right_after_initialize_reaches_the_get_stream_when_it_opens(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    late = connect(http_server.url, sessions, initialized=False)
    other = connect(http_server.url, sessions)
    other.call(SWITCH, CANVAS)  # between initialize and initialized
    late.initialized()
    stream = late.open_get_stream()
    try:
        stream.next_method(LIST_CHANGED)
        assert methods(late.request("ping")) == [None]
    finally:
        stream.close()


def test_a_change_right_after_initialize_reaches_the_first_response(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    late = connect(http_server.url, sessions, initialized=False)
    other = connect(http_server.url, sessions)
    other.call(SWITCH, CANVAS)
    late.initialized()
    assert LIST_CHANGED in notices_before_answer(late.request("ping"))


def test_resource_templates_list_answers_an_empty_list(
    http_server: HttpServer, sessions: list[RawSession]
) -> None:
    client = connect(http_server.url, sessions)
    answer = client.answer("resources/templates/list")
    assert answer["result"]["resourceTemplates"] == []


# ---------------------------------------------------------------- long lists


class ManyToolsServer:
    """``manytools.py`` as a subprocess: an HTTP server with ``count`` no-op tools."""

    def __init__(self, count: int) -> None:
        script = Path(__file__).with_name("manytools.py")
        self.process, self.url, _ = spawn_http([sys.executable, str(script), str(count)], 60)

    def stop(self) -> None:
        terminate(self.process)


@pytest.fixture
def many() -> Iterator[ManyToolsServer]:
    server = ManyToolsServer(250)
    try:
        yield server
    finally:
        server.stop()


def test_tools_list_pages_over_http_and_an_invalid_cursor_is_invalid_params(
    many: ManyToolsServer,
) -> None:
    client = RawSession(many.url)
    try:
        client.initialize()
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            answer = client.answer("tools/list", {"cursor": cursor} if cursor else None)
            result = answer["result"]
            pages += 1
            assert len(result["tools"]) <= 100
            names.extend(t["name"] for t in result["tools"])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        assert pages == 3
        assert names == [*(f"space_noop_{i:03d}" for i in range(250)), "space_presets_request"]
        error = client.answer("tools/list", {"cursor": "bogus"})["error"]
        assert error["code"] == -32602
        assert "cursor" in error["message"]
    finally:
        client.close()


# ------------------------------------------------------------ the SDK's client


@pytest.mark.anyio
async def test_an_sdk_client_hears_a_change_made_right_after_it_connects(
    http_server: HttpServer,
) -> None:
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == LIST_CHANGED:
            heard.set()

    async with Client(http_server.url, mode="legacy", message_handler=on_message):
        # No waiting for its background GET stream: the change may come first.
        async with Client(http_server.url, mode="legacy") as other:
            result = await other.call_tool(SWITCH, CANVAS)
            assert not result.is_error
        with anyio.fail_after(30):
            await heard.wait()
