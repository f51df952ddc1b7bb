"""Bearer-token authentication for the HTTP transport (``serve --auth tokens``).

``TokenAuth`` wraps the whole ASGI app: every HTTP request must carry
``Authorization: Bearer TOKEN`` for a token of the state directory's token
file (``agent_presets.server.tokens``), or it gets ``401`` with
``WWW-Authenticate: Bearer realm="agent-presets"`` and a JSON body saying
what was wrong. There is no OAuth discovery: a plain bearer check is what a
headless host with a token file can promise.

The token's name travels with the request: the middleware writes it into
the ASGI scope (``SCOPE_KEY``), which the SDK hands to request handlers as
``ctx.request``, and into a context variable for code that runs in the
request's own task. The server's list and call handlers read it
(``token_of``) to narrow the tools and count the token's budgets.

A session belongs to the token that opened it. The middleware also names
the token's principal in ``scope["user"]`` (the SDK's ``AuthenticatedUser``,
client id = the token's name, never its secret); the SDK's session manager
records the principal that opens each session and answers a request of
another principal carrying that session's id (a POST, the GET stream, a
replay with ``Last-Event-ID``, a DELETE) ``404 Session not found``, exactly
as for an id it never issued, so the answer tells the caller nothing. A
token replaced under the same name (``tokens create --replace``) is the same
principal and keeps its sessions.

Apart from that principal this module is plain ASGI.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from agent_presets.lib.model import PresetError
from agent_presets.lib.principal import LOCAL
from agent_presets.server.console import is_loopback
from agent_presets.server.policy import Allowed, Profile, ToolPolicy

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.server.tokens import TokenTable

__all__ = [
    "REALM",
    "SCOPE_KEY",
    "TokenAuth",
    "TokenProfiles",
    "check_exposure",
    "current_token",
    "is_loopback",
    "principal_of",
    "token_of",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REALM: Final = "agent-presets"
SCOPE_KEY: Final = "agent_presets.token"
current_token: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agent_presets_token", default=None
)

_CHALLENGE: Final = f'Bearer realm="{REALM}"'.encode("ascii")
_MESSAGES: Final = {
    "missing": "this server needs a bearer token: send 'Authorization: Bearer TOKEN' "
    "(the server's operator creates one with `presets tokens create NAME`)",
    "unknown": "the bearer token is not known to this server (mistyped, replaced or revoked); "
    "ask its operator for a valid one",
    "expired": "the bearer token has expired; ask the server's operator for a new one",
    "reserved": "the bearer token is named 'local', the server's own principal, so it is "
    "refused; ask the server's operator to revoke it and create one with another name",
}


def check_exposure(host: str, *, auth: str | None, insecure: bool) -> None:
    """Refuse to serve a non-loopback address with no authentication unless told to."""
    if is_loopback(host) or auth is not None or insecure:
        return
    raise PresetError(
        f"refusing to serve MCP on {host}, which is not a loopback address, without "
        "authentication: anyone who can reach it could call the tools. Pass --auth tokens "
        "(and create tokens with `presets tokens create`), or --insecure if the network is "
        "trusted"
    )


def token_of(request: Any) -> str | None:
    """The authenticated token name of a handler's ``ctx.request`` (or of this task)."""
    scope = getattr(request, "scope", None)
    if scope is not None:
        name = scope.get(SCOPE_KEY)
        if name is not None:
            return str(name)
    return current_token.get()


def principal_of(ctx: Any) -> str:
    """Who a request (a handler's ``ctx``) comes from: its token's name, else ``local``.

    ``local`` is the one principal of stdio and of HTTP without tokens.
    """
    token = token_of(ctx.request)
    return LOCAL if token is None else token


class TokenAuth:
    """ASGI middleware: only requests bearing a valid token reach the app."""

    def __init__(self, app: ASGIApp, table: TokenTable) -> None:
        self.app = app
        self.table = table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        verdict = self.table.verify(_bearer(scope))
        if verdict.record is None:
            await _refuse(send, verdict.reason or "unknown")
            return
        scope[SCOPE_KEY] = verdict.record.name
        scope["user"] = _principal(verdict.record.name)
        reset = current_token.set(verdict.record.name)
        try:
            await self.app(scope, receive, send)
        finally:
            current_token.reset(reset)


def _principal(name: str) -> AuthenticatedUser:
    """The SDK's user for token ``name``: its sessions are bound to the name (see above)."""
    # The secret stays in this module: the SDK compares the client id only.
    return AuthenticatedUser(AccessToken(token="", client_id=name, scopes=[]))


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            text: str = bytes(value).decode("latin-1")
            scheme, _, credentials = text.strip().partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
            return None
    return None


async def _refuse(send: Send, reason: str) -> None:
    body = json.dumps(
        {"error": "invalid_token", "reason": reason, "error_description": _MESSAGES[reason]},
        separators=(",", ":"),
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", _CHALLENGE),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class TokenProfiles:
    """Token name -> ``Profile``, from the token file, re-expanded when the file changes.

    A name in a token's allow-list that no installed plugin provides any
    more (checked when the token was created) is left out, not an error: the
    token then allows less, never more.
    """

    def __init__(self, presets: Presets, table: TokenTable) -> None:
        self.presets = presets
        self.table = table
        self._version = -1
        self._profiles: dict[str, Profile] = {}

    def __call__(self, name: str) -> Profile | None:
        # The middleware refreshed the table for this request; a call's several
        # policy checks need not stat the file again.
        record = self.table.get(name, refresh=False)
        if record is None or record.expired():
            return None
        if self._version != self.table.version:
            self._profiles = {}
            self._version = self.table.version
        profile = self._profiles.get(name)
        if profile is None:
            allow = None if record.allow is None else self._expand(record.allow)
            profile = Profile(
                name, allow, record.max_calls, record.max_calls_per_tool, record.delivery
            )
            self._profiles[name] = profile
        return profile

    def _expand(self, names: tuple[str, ...]) -> Allowed:
        tools: set[str] = set()
        for name in names:
            try:
                tools |= ToolPolicy.allow_list(self.presets, [name]).tools
            except PresetError:
                continue
        return Allowed(frozenset(tools), names)
