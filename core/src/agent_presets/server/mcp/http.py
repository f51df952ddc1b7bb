"""JSON-RPC answers for invalid bodies on MCP's streamable HTTP endpoint.

What the SDK's app does with a POSTed body that is not one valid message
(mcp 2.3.0, measured on ``presets serve`` before this was wired in): bad
JSON gets ``400`` and ``-32700``, as it should; ``"jsonrpc": "1.0"``, array params, a
batch, a non-string method or a non-object get ``400`` with ``-32602``
(wrong code), ``id: null`` even where the id was readable, and a pydantic
dump that echoes the client's input; ``"id": true`` or ``"id": null`` is
taken for a notification: ``202 Accepted`` and no answer at all. The modern
era (``MCP-Protocol-Version: 2026-07-28``) answers ``400``/``-32600`` with a
generic message and no id.

``EnvelopeCheck`` wraps the app and answers those bodies itself, before they
reach a session: ``400 Bad Request`` with the JSON-RPC error of
``envelope.check`` (what the MCP spec's streamable HTTP transport asks for
invalid input), the request's ``id`` where it can be read. Valid bodies, and
every request it does not judge, pass through byte for byte.

It judges only ``POST``s to the MCP path with a JSON content type and a body
within the SDK's size limit: everything else is the SDK's to refuse (415,
413, 406 ...). It runs before the SDK's Host/Origin check, which is harmless:
it only ever answers with an error about the body it was sent, and forwards
nothing it rejected. Place it inside any authentication wrapper.

Given an ``endpoint`` (the SDK's ``session_manager.handle_request``), it
sends every request to the MCP path straight there, past the Starlette app
around it: that app's router, its error and exception middleware add nothing
to a request the session manager serves (which checks Host and Origin and
the body's size itself), and cost some 20 µs of every call. Everything else
(the app's lifespan, any other path, ``/mcp/`` and its redirect) is the
app's, as before. An error the session manager raises reaches uvicorn,
which answers ``500`` as the app's error middleware would.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from agent_presets.server.mcp.envelope import INVALID_REQUEST, check, error_response

__all__ = ["DEFAULT_MAX_BODY_SIZE", "EnvelopeCheck"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY_SIZE: Final = 4 * 1024 * 1024
"""The SDK's default request body limit (``max_request_body_size``)."""

_BATCH_OF_NOTICES: Final = (
    "Invalid Request: batches are not supported: MCP 2025-11-25 removed JSON-RPC batching; "
    "send each message as its own JSON object"
)


class EnvelopeCheck:
    """ASGI middleware: a POSTed body that is not one valid JSON-RPC message gets its error."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        path: str = "/mcp",
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        endpoint: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.path = path.rstrip("/")
        self.max_body_size = max_body_size
        self.endpoint = endpoint

    def _serving(self, scope: Scope) -> ASGIApp:
        """Who serves a request that passes: the endpoint for the MCP path exactly, else the app."""
        if self.endpoint is not None and scope["type"] == "http" and scope["path"] == self.path:
            return self.endpoint
        return self.app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._judges(scope):
            await self._serving(scope)(scope, receive, send)
            return
        body = bytearray()
        cached: deque[Message] = deque()
        complete = False
        while True:
            message = await receive()
            cached.append(message)
            if message["type"] != "http.request":
                break
            body.extend(message.get("body", b""))
            if len(body) > self.max_body_size:
                break
            if not message.get("more_body", False):
                complete = True
                break

        async def replay() -> Message:
            return cached.popleft() if cached else await receive()

        rejection = check(bytes(body)) if complete else None
        if rejection is None:
            await self._serving(scope)(scope, replay, send)
            return
        payload = rejection.payload()
        if payload is None:
            # A batch of notifications: JSON-RPC answers nothing, but HTTP must
            # answer something, and 202 would claim they were accepted.
            payload = error_response(None, INVALID_REQUEST, _BATCH_OF_NOTICES)
        await _send_json(send, 400, payload)

    def _judges(self, scope: Scope) -> bool:
        if scope["type"] != "http" or scope.get("method") != "POST":
            return False
        if str(scope.get("path", "")).rstrip("/") != self.path:
            return False
        for name, value in scope.get("headers", ()):
            if name.lower() == b"content-type":
                return bool(value.lower().startswith(b"application/json"))
        return False


async def _send_json(send: Send, status: int, payload: Any) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
