"""The browser console of a running ``presets serve`` (``docs/console.md``).

This module stays light (the CLI imports it to check an address); the app,
which needs starlette and uvicorn, is ``agent_presets.server.console.app``.
"""

from __future__ import annotations

import ipaddress
from typing import Final

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, *, token: bool) -> tuple[str, ...] | None:
    """The names a request may give as its Host to a server bound at ``bound``; None: any.

    DNS rebinding: a page the attacker serves under their own name rebinds
    that name to this address, and the browser then sends it the attacker's
    name as the Host (and Origin). A server on loopback answers only loopback
    names. Elsewhere, a server guarded by a token (the MCP endpoint with
    ``--auth``, the console) takes any name: the rebinding page cannot present
    the token, and a Host check would refuse the names remote clients
    legitimately use (every name, for a wildcard address like ``0.0.0.0``).
    Elsewhere without a token: the address given, and loopback. The MCP
    endpoint gives this list to the SDK's check; the console checks it itself
    (``foreign_request``).
    """
    shown = f"[{bound}]" if ":" in bound else bound
    if is_loopback(bound):
        return tuple(dict.fromkeys([*LOOPBACK_NAMES, shown]))
    if token:
        return None
    return (shown, *LOOPBACK_NAMES)


def foreign_request(host: str | None, origin: str | None, names: tuple[str, ...] | None) -> int:
    """The status that refuses a request's Host or Origin, or 0 when both use ``names``.

    421 for a Host (``name[:port]``) not in ``names``, or none (HTTP/1.1
    requires one); 403 for an Origin not in them, as the MCP endpoint's check
    answers. A request without an Origin passes: same-origin requests may
    leave it out.
    """
    if names is None:
        return 0
    if host is None or _name(host) not in names:
        return 421
    if origin is not None and not (origin.startswith("http://") and _name(origin[7:]) in names):
        return 403
    return 0


def _name(authority: str) -> str:
    """``name:port`` or ``name`` (``[::1]:80``, ``[::1]``) without the port, lower-cased."""
    name, sep, port = authority.rpartition(":")
    return (name if sep and port.isdigit() else authority).lower()


def parse_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` as (host, port); the host is loopback when not given.

    Raises ``ValueError`` with a sentence a person can act on.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]") or "127.0.0.1"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(
            f"{text!r} is not [HOST:]PORT; give a port from 0 to 65535, like 8766 or 127.0.0.1:8766"
        )
    return host, int(port_text)
