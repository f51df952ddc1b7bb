"""What the server knows of clients by the name they give (``clientInfo``).

A client that lists its tools once and never again gets ``presets_search``
and ``presets_call`` from its first list (``server.mcp.discovery``); which
clients are known so is decided here, without the SDK, so that the start
front (``server.start``) decides it as the full server does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["KNOWN_CLIENTS", "KnownClient", "known_not_to_relist"]


@dataclass(frozen=True)
class KnownClient:
    """A client, by the name it gives (``clientInfo.name``), that does not re-list its tools."""

    name: str
    up_to: str | None
    """The newest version known to behave so (None: every version)."""
    note: str

    def matches(self, name: str, version: str | None) -> bool:
        if name != self.name:
            return False
        if self.up_to is None:
            return True
        have, limit = _version(version), _version(self.up_to)
        return have is not None and limit is not None and have <= limit


KNOWN_CLIENTS: Final = (
    KnownClient(
        "codex-mcp-client",
        "0.171.0",
        "OpenAI Codex CLI: lists tools once, at start; re-lists only with "
        "--enable mcp_tool_list_changed (off by default)",
    ),
)
"""Clients known not to re-list: ``auto`` serves them the two tools from their first list.

A later version is left to the ``seen`` rule until someone checks it (docs/clients.md)."""


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = text.split("+")[0].split("-")[0].split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def known_not_to_relist(client: tuple[str, str | None] | None) -> KnownClient | None:
    if client is None:
        return None
    return next((k for k in KNOWN_CLIENTS if k.matches(*client)), None)
