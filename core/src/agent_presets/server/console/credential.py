"""The host credential: what lets the host app, and never the agent, set the context over HTTP.

A host app in any language reports its context to a running server with
``POST /api/context`` on the console's port (``docs/hosts.md``). That
request carries ``Authorization: Bearer <host token>``, a secret of its own:

- not an agent's token (``presets tokens create``): those let an MCP client
  call tools, and a client must never steer the context that decides which
  tools it gets;
- not the console's token: that one is in a URL a person opens, so it ends
  up in a browser's history, and its holder may already change overrides;
  the host's right is a different one, so it is a different secret.

The server writes it, with the endpoint's URL, to ``STATE/host-credential.json``
(mode 0600, replaced atomically) once the console listens, and removes it
when it stops. A new server writes a new token: a host reads the file again
when it is refused. The file is as private as the control socket beside it:
the user who runs the server can read it, and the sandboxed shell cannot (the
file root may not contain the state directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path
from typing import Final

from agent_presets.lib.atomicfile import write_atomic

CREDENTIAL_FILE: Final = "host-credential.json"
HOST_PATH: Final = "/api/context"
"""Where the console takes a host's context change."""
TOKEN_PREFIX: Final = "host-"
"""Says what the token is when it turns up in a log or a shell history."""


class HostCredential:
    """One server's host token, and the file that hands it to the host app."""

    def __init__(self, path: Path, token: str | None = None) -> None:
        self.path = path
        self.token = token or TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._inode: int | None = None

    def matches(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header is ``Bearer <this token>``."""
        if authorization is None:
            return False
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        # As bytes: compare_digest refuses str with non-ASCII characters.
        return secrets.compare_digest(
            given.strip().encode("utf-8", "surrogateescape"), self.token.encode()
        )

    def publish(self, url: str) -> None:
        """Write ``{"url", "token", "pid"}`` to the file, mode 0600 before a byte is written."""
        data = {"url": url, "token": self.token, "pid": os.getpid()}
        write_atomic(self.path, (json.dumps(data, indent=2) + "\n").encode(), mode=0o600)
        self._inode = os.stat(self.path).st_ino

    def withdraw(self) -> None:
        """Remove the file if it is still the one we wrote (safe in a signal handler)."""
        with contextlib.suppress(OSError):
            if self._inode is not None and os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
