"""The browser console of a running ``presets serve`` (``docs/console.md``).

This module stays light (the CLI imports it to check an address); the app,
which needs starlette and uvicorn, is ``agent_presets.console.app``.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
