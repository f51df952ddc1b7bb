"""Live control of a running server: the controller, its wire protocol, its socket.

- ``controller``: ``Controller``, the one place that decides who may change
  which presets are on, and the agent's ``presets_request`` tool;
- ``protocol``: the JSON-lines requests and responses (``respond``);
- ``channel``: the Unix socket ``STATE/control.sock`` (``ControlListener``,
  and ``control_request``, the client the CLI uses).

``docs/control.md`` documents the protocol. Nothing here imports ``mcp``.
"""

from __future__ import annotations

from agent_presets.server.control.channel import (
    IDLE_SECONDS,
    SOCKET_NAME,
    SWEEP_SECONDS,
    ControlListener,
    NoServerError,
    control_request,
    socket_path,
)
from agent_presets.server.control.controller import (
    REQUEST_OUTPUT,
    REQUEST_TOOL,
    TTL_ENV,
    ConfirmationRequired,
    Controller,
    request_ttl_from_env,
)
from agent_presets.server.control.protocol import (
    MAX_LINE,
    OPS,
    PROTOCOL_VERSION,
    ControlError,
    respond,
)

__all__ = [
    "IDLE_SECONDS",
    "MAX_LINE",
    "OPS",
    "PROTOCOL_VERSION",
    "REQUEST_OUTPUT",
    "REQUEST_TOOL",
    "SOCKET_NAME",
    "SWEEP_SECONDS",
    "TTL_ENV",
    "ConfirmationRequired",
    "ControlError",
    "ControlListener",
    "Controller",
    "NoServerError",
    "control_request",
    "request_ttl_from_env",
    "respond",
    "socket_path",
]
