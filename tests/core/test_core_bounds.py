"""Bounds on what a client's input makes the server hold or echo (unit level).

The attacks themselves, against a running server, are in ``tests/e2e/test_e2e_bounds.py``.
"""

from __future__ import annotations

import json
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples
from mcp_types import JSONRPCResponse

from agent_presets.lib.adapters import check_arguments
from agent_presets.lib.model import ToolArgumentError
from agent_presets.lib.suggest import did_you_mean
from agent_presets.server.console.app import TAIL, Console
from agent_presets.server.control import Controller
from agent_presets.server.eventlog import EventLog, LogFollower, read_events
from agent_presets.server.events import Call
from agent_presets.server.mcp import sessionlimit
from agent_presets.server.mcp.envelope import INVALID_REQUEST, too_long
from agent_presets.server.mcp.eventstore import MemoryEventStore
from agent_presets.server.mcp.sessionlimit import SessionLimit
from agent_presets.server.stats import stats_of_log

from .conftest import build_preset, build_stack

MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("start", "id_"),
    [
        ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"xxxx', 7),
        ('{"jsonrpc":"2.0","id":"a","method":"x"', "a"),
        # The id could be cut short (12 of 123): not trusted.
        ('{"jsonrpc":"2.0","id":12', None),
        # An "id" inside params is not the request's.
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"id":3,"name":"xx', None),
        ("xxxxxxxx", None),
        ('{"jsonrpc":"2.0","id":true,"method":"x"', None),
    ],
)
def test_an_over_long_message_is_answered_with_its_id_only_when_the_start_shows_it_whole(
    start: str, id_: object
) -> None:
    rejection = too_long(start, 100)
    assert rejection.errors[0][:2] == (id_, INVALID_REQUEST)
    assert "limit of 100 characters" in rejection.message


def big_answer(request_id: int, size: int) -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"text": "x" * size})


def test_the_event_store_keeps_at_most_max_bytes_dropping_the_oldest_first() -> None:
    async def main() -> None:
        store = MemoryEventStore(max_bytes=8 * MIB)
        ids = [await store.store_event(str(n), big_answer(n, MIB)) for n in range(30)]
        # Eight answers of a little over 1 MiB each would pass 8 MiB: seven stay.
        assert store.event_count() == 7
        assert store.stream_of(ids[22]) is None
        assert store.stream_of(ids[23]) == "23"

    anyio.run(main)


def test_the_event_store_keeps_the_newest_event_whatever_its_size() -> None:
    async def main() -> None:
        store = MemoryEventStore(max_bytes=1024)
        await store.store_event("1", big_answer(1, 10))
        last = await store.store_event("2", big_answer(2, MIB))
        assert store.event_count() == 1 and store.stream_of(last) == "2"
        # The bytes leave with the events: small ones fit again afterwards.
        for n in range(3, 8):
            await store.store_event(str(n), big_answer(n, 10))
        assert store.event_count() == 5

    anyio.run(main)


def test_no_suggestion_is_searched_for_a_name_far_longer_than_any_known() -> None:
    # difflib indexes every character of the name first: 3 MiB made ~120 MB and seconds.
    name = "x" * (3 * MIB)
    tracemalloc.start()
    try:
        assert did_you_mean(name, ["space_app", "space_notes"], "list them") == "; list them"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MIB
    assert did_you_mean("space_ap", ["space_app", "space_notes"], "list them") == (
        "; did you mean 'space_app'?"
    )


def test_an_argument_error_quotes_a_huge_value_short_and_keeps_what_was_expected() -> None:
    import jsonschema

    schema = {
        "type": "object",
        "properties": {"surface": {"enum": ["scene", "canvas"]}},
        "additionalProperties": False,
    }
    validator = jsonschema.Draft202012Validator(schema)
    with pytest.raises(ToolArgumentError) as raised:
        check_arguments("space_switch", validator, {"surface": "y" * MIB})
    message = str(raised.value)
    assert len(message) < 500
    assert f"({MIB:,} characters)" in message and "is not one of ['scene', 'canvas']" in message
    with pytest.raises(ToolArgumentError) as raised:
        check_arguments("space_switch", validator, {"k" * MIB: 1})
    assert len(str(raised.value)) < 500


# ------------------------------------------------------------ the console's log


def write_calls(log: EventLog, tools: list[str]) -> None:
    for n, tool in enumerate(tools):
        log.write(Call(tool=tool, ok=n % 3 != 0, latency_ms=float(n % 7)))


def test_a_follower_reads_only_what_was_appended_since_its_last_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    write_calls(log, ["space_a", "space_b", "space_c"])
    follower = LogFollower(path)
    gone, events = follower.read()
    assert gone == [] and [e["tool"] for _, e in events] == ["space_a", "space_b", "space_c"]
    # Blank out the lines already read (a reader that read them again would lose them) ...
    size = path.stat().st_size
    with path.open("r+b") as file:
        file.seek(100)
        file.write(b" " * (size - 101))
    write_calls(log, ["space_d", "space_e"])
    gone, events = follower.read()
    # ... and only the two new lines come back.
    assert gone == [] and [e["tool"] for _, e in events] == ["space_d", "space_e"]
    assert list(follower.read()[1]) == []


def test_a_follower_takes_a_line_only_once_its_newline_is_written(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    line = json.dumps(Call(tool="space_a", ok=True, latency_ms=1.0).to_json()).encode()
    path.write_bytes(line[:20])
    follower = LogFollower(path)
    assert list(follower.read()[1]) == []
    with path.open("ab") as file:
        file.write(line[20:] + b"\n")
    assert [e["tool"] for _, e in follower.read()[1]] == ["space_a"]


def test_a_follower_follows_rotation_and_says_which_files_left(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=1024, backups=1)
    follower = LogFollower(path)
    write_calls(log, ["space_a"] * 3)
    gone, events = follower.read()
    first_key = {key for key, _ in events}
    assert gone == [] and len(first_key) == 1
    write_calls(log, ["space_b"] * 30)  # rotates several times: the first file is removed
    gone, events = follower.read()
    tools = [e["tool"] for _, e in events]
    assert set(gone) == first_key and set(tools) == {"space_b"}
    # Every line still in the log was read once: the ones read before plus these.
    assert [e["tool"] for e in read_events(path)] == tools[-len(list(read_events(path))) :]


@settings(max_examples=examples(40), deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 12), st.booleans()), min_size=1, max_size=25),
    backups=st.integers(0, 3),
)
def test_the_console_shows_what_a_full_reading_of_the_log_shows(
    steps: list[tuple[int, bool]], backups: int
) -> None:
    stack = build_stack([build_preset("theme-tools")])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        log = EventLog(path, max_bytes=1024, backups=backups)
        console = Console(Controller(stack.manager), event_log=path, token="t")
        try:
            for count, snapshot in steps:
                write_calls(log, [f"space_t{count % 4}"] * count)
                if snapshot:
                    shown = console.log_snapshot()
                    assert shown["stats"] == stats_of_log(path)
                    assert shown["events"] == list(read_events(path))[-TAIL:]
        finally:
            console.close()
            log.close()


# ------------------------------------------------------------ the session limit


class FakeSessions:
    """The SDK's app as SessionLimit sees it: a POST without an id opens a session."""

    def __init__(self) -> None:
        self.ended: list[str] = []
        self.count = 0
        self.hold = anyio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id")
        answer: list[tuple[bytes, bytes]] = []
        if scope["method"] == "DELETE":
            self.ended.append(session.decode())
        elif scope["method"] == "GET":
            await self.hold.wait()  # an open GET stream
        elif session is None and headers.get(b"mcp-protocol-version") != b"2026-07-28":
            self.count += 1
            answer.append((b"mcp-session-id", f"s{self.count}".encode()))
        await send({"type": "http.response.start", "status": 200, "headers": answer})
        await send({"type": "http.response.body", "body": b""})


async def request(app: Any, method: str, session: str | None = None, version: str = "") -> None:
    headers = [(b"host", b"127.0.0.1")]
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    if version:
        headers.append((b"mcp-protocol-version", version.encode()))
    scope = {"type": "http", "method": method, "path": "/mcp", "headers": headers}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        pass

    await app(scope, receive, send)


def test_at_the_session_limit_only_an_opening_ends_a_session_and_never_a_busy_one() -> None:
    async def main() -> None:
        sdk = FakeSessions()
        limit = SessionLimit(sdk, max_sessions=3)
        for _ in range(3):
            await request(limit, "POST")  # s1, s2, s3
        await request(limit, "POST", "s1")  # s1 has been used since
        async with anyio.create_task_group() as tg:
            tg.start_soon(request, limit, "GET", "s2")  # s2 is listening
            await anyio.wait_all_tasks_blocked()
            for _ in range(5):  # the modern era opens no session: no room needed
                await request(limit, "POST", None, "2026-07-28")
            assert sdk.ended == []
            await request(limit, "POST")  # s4: the unused s3 makes way, not the busy s2
            await request(limit, "POST")  # s5: then s4, never used either
            await request(limit, "POST")  # s6: then s5; the used s1 only after those
            assert sdk.ended == ["s3", "s4", "s5"]
            sdk.hold.set()

    anyio.run(main)


def test_a_session_that_sent_nothing_after_initialize_is_ended_after_a_minute() -> None:
    """Issue 27: 300 sessions that never sent a request were kept for the SDK's 30 minutes."""
    from agent_presets.server.mcp.sessionlimit import UNUSED_SECONDS

    now = [0.0]

    async def main() -> None:
        sdk = FakeSessions()
        limit = SessionLimit(sdk, max_sessions=1000, clock=lambda: now[0])
        for _ in range(3):
            await request(limit, "POST")  # s1, s2, s3
        await request(limit, "POST", "s1")  # notifications/initialized: s1 is used
        now[0] += UNUSED_SECONDS - 1
        await request(limit, "POST", None, "2026-07-28")
        assert sdk.ended == []
        now[0] += 2
        await request(limit, "POST", "s2")  # too late: ended before it is looked at
        assert sdk.ended == ["s2", "s3"]
        await request(limit, "POST")  # s4, a new one, has its own minute
        now[0] += UNUSED_SECONDS - 1
        await request(limit, "POST", "s1")
        assert sdk.ended == ["s2", "s3"]

    anyio.run(main)


def test_unused_sessions_are_swept_without_any_request_coming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The second a sweep waits past its due time only gathers sessions due together.
    monkeypatch.setattr(sessionlimit, "SWEEP_SLACK", 0.05)

    async def main() -> None:
        sdk = FakeSessions()
        limit = SessionLimit(sdk, unused_timeout=0.1)
        for _ in range(3):
            await request(limit, "POST")
        await request(limit, "POST", "s2")
        with anyio.fail_after(10):
            while sorted(sdk.ended) != ["s1", "s3"]:
                await anyio.sleep(0.05)

    anyio.run(main)
