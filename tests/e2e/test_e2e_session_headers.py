"""A request that names two sessions: the server must read the one the SDK serves.

The SDK's session manager takes the first ``Mcp-Session-Id`` header of a
request, and checks that its token owns that session. Everything the server
keeps by session besides (whether it listens on a GET stream, which session's
events a stream stores and replays) must take the same one: read as another,
token B could open a stream on its own session while the server counts it as
token A's.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from pathlib import Path

from .conftest import HttpServer
from .rawhttp import LIST_CHANGED, RawSession, lines_of, sse_events
from .test_e2e_token_sessions import opened, served
from .test_e2e_tokens import run

__all__ = ["served"]  # the fixture


def _get_stream_naming(session: RawSession, *session_ids: str) -> http.client.HTTPConnection:
    """Open a GET stream with one ``Mcp-Session-Id`` header per id, in order."""
    connection = session.connection(timeout=None)
    connection.putrequest("GET", session.path)
    for name, value in session.headers(Accept="text/event-stream").items():
        if name not in ("Mcp-Session-Id", "Content-Type"):
            connection.putheader(name, value)
    for session_id in session_ids:
        connection.putheader("Mcp-Session-Id", session_id)
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 200, response.status
    threading.Thread(target=_drain, args=(response,), daemon=True).start()
    return connection


def _drain(response: http.client.HTTPResponse) -> None:
    with contextlib.suppress(OSError, http.client.HTTPException, ValueError, AttributeError):
        list(sse_events(lines_of(response)))  # until the test closes the connection


def _stop(connection: http.client.HTTPConnection) -> None:
    if connection.sock is not None:
        connection.sock.close()
    connection.close()


def test_a_stream_opened_with_two_session_ids_does_not_silence_the_other_session(
    served: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = served
    victim = opened(server, tokens["wide"])
    victim.answer("tools/list")
    attacker = opened(server, tokens["zulu-other"])
    # The attacker's own session first (the SDK serves it), the victim's after.
    stream = _get_stream_naming(attacker, attacker.session_id, victim.session_id)
    try:
        done = run("on", "general-file-write-tools", "--yes", "--state-dir", str(state))
        assert done.returncode == 0, done.stderr
        # The victim never opened a GET stream: it hears the change on its next answer.
        events = victim.request("ping")
        assert LIST_CHANGED in [event.method for event in events[:-1]], events
    finally:
        _stop(stream)
