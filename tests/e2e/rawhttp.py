"""A raw legacy-era MCP client over streamable HTTP (``http.client``, no SDK), for the e2e tests.

It sees exactly what is on the wire: each POST's SSE events in order (change
notices before the answer), the GET stream's events with their ids, and what
a client that never opens a GET stream hears.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import queue
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"
LIST_CHANGED = "notifications/tools/list_changed"
TIMEOUT = 30.0


@dataclass(frozen=True)
class Event:
    id: str | None
    message: dict[str, Any]

    @property
    def method(self) -> str | None:
        return self.message.get("method")


def sse_events(lines: Iterator[str]) -> Iterator[Event]:
    """SSE events from text lines; an event without data (a priming event) is skipped."""
    event_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data and "".join(data).strip():
                yield Event(event_id, json.loads("\n".join(data)))
            event_id, data = None, []
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def lines_of(response: http.client.HTTPResponse) -> Iterator[str]:
    while True:
        raw = response.readline()
        if not raw:
            return
        yield raw.decode().rstrip("\r\n")


class RawSession:
    """One legacy session: ``initialize``, then requests by POST; a GET stream on demand.

    With a ``token``, every request carries it as ``Authorization: Bearer``.
    """

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path
        self.session_id = ""
        self._ids = itertools.count(1)

    def close(self) -> None:
        """Nothing to release: each request opens and closes its own connection."""

    def connection(self, timeout: float | None = TIMEOUT) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra)
        return headers

    def post(
        self, body: dict[str, Any], until: Any = None
    ) -> tuple[int, dict[str, str], list[Event]]:
        """Status, headers and the SSE events of one POST (up to the answer to ``until``)."""
        connection = self.connection()
        try:
            connection.request("POST", self.path, body=json.dumps(body), headers=self.headers())
            response = connection.getresponse()
            headers = {k.lower(): v for k, v in response.getheaders()}
            events: list[Event] = []
            if headers.get("content-type", "").startswith("text/event-stream"):
                for event in sse_events(lines_of(response)):
                    events.append(event)
                    if until is not None and event.message.get("id") == until:
                        break
            else:
                text = response.read().decode()
                if text:
                    events.append(Event(None, json.loads(text)))
            return response.status, headers, events
        finally:
            connection.close()

    def initialize(self, *, initialized: bool = True) -> list[Event]:
        body = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        }
        status, headers, events = self.post(body, until=0)
        assert status == 200, events
        self.session_id = headers["mcp-session-id"]
        if initialized:
            self.initialized()
        return events

    def initialized(self) -> None:
        status, _, events = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, events

    def request(self, method: str, params: dict[str, Any] | None = None) -> list[Event]:
        """Every event of the request's SSE response, ending with its answer."""
        request_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        status, headers, events = self.post(body, until=request_id)
        assert status == 200, events
        assert headers["content-type"].startswith("text/event-stream"), headers
        assert events and events[-1].message.get("id") == request_id, events
        return events

    def answer(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.request(method, params)[-1].message

    def call(self, name: str, arguments: dict[str, Any]) -> list[Event]:
        events = self.request("tools/call", {"name": name, "arguments": arguments})
        result = events[-1].message["result"]
        assert not result["isError"], result
        return events

    def open_get_stream(self, last_event_id: str | None = None) -> GetStream:
        stream = GetStream(self, last_event_id)
        stream.opened.wait(TIMEOUT)
        assert stream.status == 200, stream.status
        return stream


class GetStream:
    """A session's GET stream read on a thread until ``close()``; events land in ``events``."""

    def __init__(self, session: RawSession, last_event_id: str | None) -> None:
        self.events: queue.Queue[Event] = queue.Queue()
        self.opened = threading.Event()
        self.status = 0
        headers = session.headers(Accept="text/event-stream")
        headers.pop("Content-Type")
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self._connection = session.connection(timeout=None)
        self._thread = threading.Thread(
            target=self._read, args=(session.path, headers), daemon=True
        )
        self._thread.start()

    def _read(self, path: str, headers: dict[str, str]) -> None:
        try:
            self._connection.request("GET", path, headers=headers)
            response = self._connection.getresponse()
            self.status = response.status
            self.opened.set()
            for event in sse_events(lines_of(response)):
                self.events.put(event)
        except (OSError, http.client.HTTPException, ValueError, AttributeError):
            pass  # closed under the reader (http.client may trip over its own closed file)
        finally:
            self.opened.set()

    def next(self, timeout: float = TIMEOUT) -> Event:
        return self.events.get(timeout=timeout)

    def next_method(self, method: str, timeout: float = TIMEOUT) -> Event:
        while True:
            event = self.next(timeout)
            if event.method == method:
                return event

    def close(self) -> None:
        """Drop the connection, as a client that goes away does."""
        sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()
        self._thread.join(TIMEOUT)
