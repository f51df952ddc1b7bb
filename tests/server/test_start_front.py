"""The start front's parts: its copy of the SDK's facts, its reading, its writer's hand-over.

The byte-for-byte comparison with the full server is in
``tests/e2e/test_e2e_start.py``; here are the rules that keep it honest.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from json_strategies import nested

from agent_presets.server.mcp.envelope import _ID_WINDOW, check
from agent_presets.server.mcp.http import DEFAULT_MAX_BODY_SIZE
from agent_presets.server.start import front as front_module
from agent_presets.server.start.front import (
    HANDSHAKE_VERSIONS,
    MODERN_VERSIONS,
    Replies,
    StartFront,
    _parse,
)
from agent_presets.server.start.wire import HEAD, MAX_MESSAGE, LineWriter, TooLong


def test_the_fronts_copy_of_the_sdks_facts_is_the_sdks() -> None:
    import mcp_types
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert MODERN_VERSIONS == MODERN_PROTOCOL_VERSIONS
    assert front_module.PROTOCOL_KEY == mcp_types.PROTOCOL_VERSION_META_KEY
    assert front_module.CLIENT_INFO_KEY == mcp_types.CLIENT_INFO_META_KEY
    assert front_module.CLIENT_CAPABILITIES_KEY == mcp_types.CLIENT_CAPABILITIES_META_KEY
    assert front_module.SERVER_INFO_KEY == mcp_types.SERVER_INFO_META_KEY
    assert MAX_MESSAGE == DEFAULT_MAX_BODY_SIZE
    assert HEAD >= _ID_WINDOW  # an over-long line keeps what its answer reads


KEYS = ["jsonrpc", "id", "method", "params", "_meta", "cursor", "name", "x"]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(["2.0", "tools/list", "initialize", "\ud800", "é"]),
)


@given(nested(SCALARS, KEYS))
def test_what_the_front_reads_as_a_message_the_sdk_reads_as_one_too(value: Any) -> None:
    line = json.dumps(value)
    message = _parse(line)
    if message is not None:
        assert check(line) is None


@given(st.text(max_size=60))
def test_no_text_makes_the_front_raise(text: str) -> None:
    _parse(text)


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"2.0","id":1,"method":"tools/list","id":2}',  # a key twice
        '{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/\\u006cist"}',  # an escape
        '[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
        '{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}',
    ],
)
def test_anything_but_the_plainest_request_is_left_to_the_sdk(line: str) -> None:
    assert _parse(line) is None


def test_the_writer_drops_the_full_servers_answer_to_an_answered_request() -> None:
    buffer = io.BytesIO()
    out = LineWriter(buffer)
    line = '{"jsonrpc":"2.0","id":1,"result":{}}'
    out.send(line + "\n")
    out.expect("1", line)
    assert not out.wait_expected(0)
    out.write(line + "\n")  # the full server's, the same: dropped
    assert out.wait_expected(0)
    out.write(line + "\n")  # a second answer to id 1 (a new request): sent
    assert buffer.getvalue().decode().splitlines() == [line, line]


def test_an_answer_that_differs_is_logged_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    out = LineWriter(io.BytesIO())
    seen: list[tuple[str, str, str]] = []
    out.on_mismatch = lambda *args: seen.append(args)
    out.expect('"a"', '{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}')
    with caplog.at_level(logging.ERROR, "agent_presets.server.start"):
        out.write('{"jsonrpc":"2.0","id":"a","result":{"tools":[1]}}\n')
    assert "differs from the full server" in caplog.text
    assert seen and seen[0][0] == '"a"'


# ------------------------------------------------------------------ a front in process


class Pipes:
    """sys.stdin and sys.stdout over pipes, as a client would hold them."""

    def __init__(self) -> None:
        self.in_read, self.in_write = os.pipe()
        self.out_read, self.out_write = os.pipe()
        self.stdin = io.TextIOWrapper(io.FileIO(self.in_read, "rb"), encoding="utf-8")
        self.stdout = io.TextIOWrapper(io.FileIO(self.out_write, "wb"), encoding="utf-8")
        self.answers = io.TextIOWrapper(io.FileIO(self.out_read, "rb"), encoding="utf-8")

    def send(self, *messages: dict[str, Any]) -> None:
        os.write(self.in_write, "".join(json.dumps(m) + "\n" for m in messages).encode())

    def close(self) -> None:
        os.close(self.in_write)  # the end of input: the front's thread stops reading
        for stream in (self.stdout, self.answers):
            stream.close()

    def answer(self) -> dict[str, Any]:
        """The next line the server wrote, read."""
        return dict(json.loads(self.answers.readline()))


@pytest.fixture
def front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from agent_presets_general import SpaceHost

    presets = SpaceHost(tmp_path / "state").start()
    pipes = Pipes()
    # Not backed by fd 0 and 1: the front serves them in place, as the SDK would.
    monkeypatch.setattr(sys, "stdin", pipes.stdin)
    monkeypatch.setattr(sys, "stdout", pipes.stdout)
    replies = Replies(
        presets, policy=None, page_size=100, tool_budget=None, discovery="list", store=None
    )
    started = StartFront(replies)
    yield started, pipes
    pipes.close()
    started.close()
    presets.sync.stop()
    started._thread.join(5)  # it has read the end of input
    pipes.stdin.close()


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2099-01-01",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}


def test_a_front_answers_the_handshake_and_hands_every_line_over_in_order(front: Any) -> None:
    started, pipes = front
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
    later = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
    pipes.send(
        INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, listing, call, later
    )
    sent = {1: pipes.answers.readline(), 2: pipes.answers.readline()}
    # An unknown version is answered with the newest the SDK speaks, as the SDK does.
    assert json.loads(sent[1])["result"]["protocolVersion"] == HANDSHAKE_VERSIONS[-1]
    tools = json.loads(sent[2])["result"]["tools"]
    assert "space_presets_request" in {t["name"] for t in tools}
    got: list[Any] = []
    done = threading.Event()

    def deliver(item: Any) -> bool:
        if not item:  # the end of input, when the test is over
            return False
        got.append(item)
        request = json.loads(item)
        if request.get("id") in sent:  # the full server answers again, the same: dropped
            started.out.write(sent[request["id"]])
        if len(got) == 5:
            done.set()
        return True

    started.hand_over(deliver)
    assert done.wait(10)
    assert [json.loads(i)["method"] for i in got] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "tools/list",
    ]
    assert started.answered == ["initialize", "tools/list"]
    started.out.write('{"jsonrpc":"2.0","id":3,"result":{}}\n')  # the call's answer goes out
    assert pipes.answer() == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_an_over_long_line_is_handed_over_as_such(front: Any) -> None:
    started, pipes = front
    os.write(pipes.in_write, b'{"id": 7, "x": "' + b"a" * (MAX_MESSAGE + 10) + b'"}\n')
    got: list[Any] = []
    done = threading.Event()
    started.hand_over(lambda item: bool(got.append(item) or done.set() or True))
    assert done.wait(30)
    assert isinstance(got[0], TooLong) and got[0].head.startswith('{"id": 7')
    assert started.answered == []
