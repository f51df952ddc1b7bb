"""The upstream stdio transport's reader and limits, without a process (upstream_stdio.py)."""

from __future__ import annotations

import json

import pytest

from agent_presets.server.mcp import upstream_stdio
from agent_presets.server.mcp.upstream_stdio import NOTICE_BURST, Bounds, _Lines, _TooLong


def test_a_line_split_over_many_chunks_comes_out_whole_and_lines_in_one_chunk_apart() -> None:
    lines = _Lines(1024)
    out: list[bytes] = []
    for chunk in (b'{"a":', b"1", b'}\n{"b":2}\n{"c"', b":3}\n"):
        out += lines.feed(chunk)
    assert out == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_a_line_longer_than_the_limit_is_refused_before_its_end_arrives() -> None:
    lines = _Lines(100)
    lines.feed(b"x" * 60)
    with pytest.raises(_TooLong):
        lines.feed(b"x" * 60)  # no newline yet: 120 bytes held is already too many


def test_log_notices_past_the_burst_are_dropped_and_counted_but_answers_never() -> None:
    bounds = Bounds("fake")
    notice = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "x"},
        }
    ).encode()
    admitted = [bounds.message(notice) for _ in range(NOTICE_BURST + 50)]
    assert sum(m is not None for m in admitted) in range(NOTICE_BURST, NOTICE_BURST + 5)
    assert bounds.dropped["log"] >= 45
    answer = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}).encode()
    assert all(bounds.message(answer) is not None for _ in range(1000))


def test_a_line_that_is_not_json_rpc_is_dropped_and_counted() -> None:
    bounds = Bounds("fake")
    assert bounds.message(b"Listening on stdio...") is None
    assert bounds.message(b'{"jsonrpc": "2.0", "id": 1}') is None
    assert bounds.dropped["invalid"] == 2


def test_an_upstream_message_may_take_8_mib_as_the_docs_say() -> None:
    assert upstream_stdio.MAX_MESSAGE == 8 * 1024 * 1024
