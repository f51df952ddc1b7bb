"""Who a tool call acts for: the principal, for handlers and hosts that keep state per principal.

A principal is who presented the authorization: a token's name on an HTTP
server with ``--auth tokens``, ``local`` on stdio or an unauthenticated
loopback server. The server sets it around each tool call, so a handler (or
the runtime it acts on) reads ``current_principal()`` wherever it runs, on
the event loop or a worker thread:

    from agent_presets import current_principal

    def handler(app, arguments):
        notes = app.notes_of(current_principal())   # a host keying its runtimes by principal

The app's data is shared by default, like a Space shared by its members: a
runtime that does not ask stays one for everyone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

LOCAL: Final = "local"
"""The principal of a server without authentication (stdio, an unauthenticated loopback)."""

_current: ContextVar[str] = ContextVar("agent_presets_principal", default=LOCAL)


def current_principal() -> str:
    """The principal the running tool call acts for; ``local`` outside any call."""
    return _current.get()


@contextmanager
def acting_as(principal: str) -> Iterator[None]:
    """Run the block as ``principal`` (the server does this around each call)."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)
