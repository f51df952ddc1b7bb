"""A session belongs to the token that opened it; the status resource shows a token only its own.

Every attack here is driven over raw HTTP (``rawhttp``) against ``presets
serve --transport http --auth tokens``: token B presents token A's
``Mcp-Session-Id`` on each kind of request the session answers (a POST, the
GET stream, a replay with ``Last-Event-ID``, a DELETE) and must get exactly
what an unknown session id gets, with nothing of A's in it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import HttpServer
from .rawhttp import RawSession
from .test_e2e_tokens import create

STATUS_URI = "presets://active/status"
NARROW_ALLOW = ["general-theme-tools", "space_unit_list"]


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    body: bytes


def send(
    session: RawSession,
    method: str,
    *,
    session_id: str | None = None,
    body: dict[str, Any] | None = None,
    last_event_id: str | None = None,
    read_for: float = 2.0,
) -> Reply:
    """One request with ``session``'s token and ``session_id`` (its own by default).

    An event stream is read for ``read_for`` seconds, then dropped: a stream
    that should not have been opened shows what it carried, never hangs.
    """
    headers = session.headers()
    headers["Mcp-Session-Id"] = session_id if session_id is not None else session.session_id
    if method != "POST":
        headers.pop("Content-Type")
    if method == "GET":
        headers["Accept"] = "text/event-stream"
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    connection = session.connection(timeout=read_for)
    try:
        payload = json.dumps(body) if body is not None else None
        connection.request(method, session.path, body=payload, headers=headers)
        response = connection.getresponse()
        content_type = response.getheader("Content-Type") or ""
        data = bytearray()
        try:
            while chunk := response.read1(65536):
                data.extend(chunk)
        except TimeoutError:
            pass  # a stream that stays open: what it sent so far is the answer
        return Reply(response.status, content_type, bytes(data))
    finally:
        connection.close()


def unknown_session(session: RawSession, method: str, **kwargs: Any) -> Reply:
    """What ``session``'s token gets for ``method`` with a session id nobody opened."""
    return send(session, method, session_id=uuid.uuid4().hex, **kwargs)


def sse(body: bytes) -> list[tuple[str | None, str]]:
    """Every SSE event of ``body`` as (id, data), priming events (no data) included."""
    events: list[tuple[str | None, str]] = []
    event_id: str | None = None
    data: list[str] = []
    for line in body.decode().replace("\r\n", "\n").split("\n"):
        if line == "":
            if event_id is not None or data:
                events.append((event_id, "\n".join(data)))
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return events


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


PING = request(90, "ping")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, Path, dict[str, str]]]:
    state = tmp_path / "state"
    tokens = {
        "narrow": create(state, "narrow", *(a for n in NARROW_ALLOW for a in ("--allow", n)),
                         "--max-calls-per-tool", "2"),
        "wide": create(state, "wide", "--max-calls", "50"),
        "zulu-other": create(state, "zulu-other"),
    }  # fmt: skip
    server = HttpServer(
        state, "--auth", "tokens", "--on", "units-inspect-tools", "--on", "general-file-read-tools"
    )
    try:
        yield server, state, tokens
    finally:
        server.stop()


def opened(server: HttpServer, token: str) -> RawSession:
    session = RawSession(server.url, token)
    session.initialize()
    return session


# ------------------------------------------------------------------ session ownership


def test_another_tokens_replay_of_a_sessions_result_is_refused(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, _, tokens = served
    alice, bob = opened(server, tokens["wide"]), opened(server, tokens["zulu-other"])
    call = request(7, "tools/call", {"name": "space_app_set_theme", "arguments": {"theme": "dark"}})
    posted = send(alice, "POST", body=call)
    assert posted.status == 200 and posted.content_type.startswith("text/event-stream")
    events = sse(posted.body)
    priming = events[0]
    assert priming[0] and not priming[1], events  # an id and no data: resume from here

    stolen = send(bob, "GET", session_id=alice.session_id, last_event_id=priming[0])
    assert stolen == unknown_session(bob, "GET", last_event_id=priming[0])
    assert stolen.status == 404 and b'"id":7' not in stolen.body

    # The rightful owner still resumes and gets its result.
    resumed = send(alice, "GET", last_event_id=priming[0])
    assert resumed.status == 200
    answers = [json.loads(data) for _, data in sse(resumed.body) if data]
    assert [a.get("id") for a in answers] == [7] and not answers[0]["result"]["isError"]


def test_another_token_cannot_open_a_sessions_get_stream(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, _, tokens = served
    alice, bob = opened(server, tokens["wide"]), opened(server, tokens["zulu-other"])
    stolen = send(bob, "GET", session_id=alice.session_id, read_for=1.0)
    assert stolen == unknown_session(bob, "GET", read_for=1.0)
    assert stolen.status == 404
    # The session's one GET stream is still free for its owner.
    stream = alice.open_get_stream()
    stream.close()


def test_another_token_cannot_post_or_delete_in_a_session(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, _, tokens = served
    alice, bob = opened(server, tokens["narrow"]), opened(server, tokens["wide"])
    posted = send(bob, "POST", session_id=alice.session_id, body=PING)
    assert posted == unknown_session(bob, "POST", body=PING)
    assert posted.status == 404
    assert json.loads(posted.body) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Session not found"},
    }

    deleted = send(bob, "DELETE", session_id=alice.session_id)
    assert deleted == unknown_session(bob, "DELETE")
    assert deleted.status == 404
    # Alice's session is alive: her requests are answered, and she can end it herself.
    assert alice.answer("ping")["result"] == {}
    assert send(alice, "DELETE").status == 200
    assert send(alice, "POST", body=PING).status == 404


def test_the_same_token_keeps_its_sessions_apart_but_may_use_each(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, _, tokens = served
    first, second = opened(server, tokens["wide"]), opened(server, tokens["wide"])
    # One token, two sessions: a session is the token's, so either id serves it.
    assert send(second, "POST", session_id=first.session_id, body=PING).status == 200
    assert first.answer("ping")["result"] == {}


# ------------------------------------------------------------------ event ids


def test_event_ids_are_unguessable(served: tuple[HttpServer, Path, dict[str, str]]) -> None:
    server, _, tokens = served
    alice = opened(server, tokens["wide"])
    ids = []
    for n in range(3):
        events = sse(send(alice, "POST", body=request(n + 1, "tools/list")).body)
        ids += [event_id for event_id, _ in events if event_id]
    assert len(ids) == 6 and len(set(ids)) == 6, ids
    # At least 128 random bits each, and no shared prefix or counter to step along.
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22,}", i) for i in ids), ids
    assert len({i[:4] for i in ids}) == len(ids), ids


# ------------------------------------------------------------------ the status resource


def status_of(session: RawSession) -> tuple[dict[str, Any], str]:
    answer = session.answer("resources/read", {"uri": STATUS_URI})
    text = answer["result"]["contents"][0]["text"]
    return json.loads(text), text


def test_a_narrowed_token_reads_only_its_own_status(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = served
    other = opened(server, tokens["zulu-other"])
    other.call("space_app_set_theme", {"theme": "dark"})
    narrow = opened(server, tokens["narrow"])
    narrow.call("space_unit_list", {})

    status, text = status_of(narrow)
    assert "zulu-other" not in text and "wide" not in text  # no other token, by name or count
    assert "event_log" not in text and str(state) not in text  # no server internals
    assert "general-file-read-tools" not in text  # an override of tools it does not have
    assert status["overrides"] == {"units-inspect-tools": "on"}
    assert sorted(status["tools"]) == ["space_app_set_theme", "space_unit_list"]
    assert status["policy"] == {
        "token": "narrow",
        "allow": NARROW_ALLOW,
        "calls": 1,
        "max_calls": None,
        "max_calls_per_tool": 2,
        "server": {"max_calls": None, "max_calls_per_tool": None},
    }


def test_an_unnarrowed_token_sees_every_preset_but_no_other_token(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = served
    other = opened(server, tokens["zulu-other"])
    other.call("space_app_set_theme", {"theme": "dark"})
    wide = opened(server, tokens["wide"])

    status, text = status_of(wide)
    assert "zulu-other" not in text and "event_log" not in text and str(state) not in text
    assert status["overrides"] == {"units-inspect-tools": "on", "general-file-read-tools": "on"}
    assert "space_app_read_file" in status["tools"]
    assert status["policy"] == {
        "token": "wide",
        "allow": None,
        "calls": 0,
        "max_calls": 50,
        "max_calls_per_tool": None,
        "server": {"max_calls": None, "max_calls_per_tool": None},
    }
