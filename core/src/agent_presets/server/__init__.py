"""The served process: everything that exists only while ``presets serve`` runs.

The library (``agent_presets``'s model, loader, registry, manager, adapters,
sync, plugins and bootstrap) decides which tools are active; this package
serves them and keeps what a running server keeps:

- ``process``: the served process put together from ``presets serve``'s
  settings, and run;
- ``mcp``: the MCP glue (the server class, its transports, the call
  pipeline, confirmation, change fan-out); the only part that imports ``mcp``;
- ``config``: ``ServeConfig``, every serving option in one frozen object;
- ``policy``: allow-lists, budgets and the one record per call;
- ``control``: live control of a running server (the controller, its wire
  protocol and the control socket);
- ``requests``: what the agent asked for that waits for a person;
- ``tokens``: bearer tokens and their profiles;
- ``events`` and ``eventlog``: the event log's schema and its file;
- ``stats``: what the log says;
- ``console``: the browser console;
- ``host``: the headless host it serves (its shell, file root and runtime
  slots), whose public names are ``agent_presets.host``'s;
- ``store``: what it keeps, in its state directory or on Redis: principals,
  tokens, requests, the event log, the runtimes' tables, the state lock.

Nothing in the library imports this package. ``serve``, ``build_server``,
``PresetServer`` and ``ServeConfig`` load on first use, so ``import
agent_presets.server.policy`` (the CLI's control commands) never imports ``mcp``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_presets._lazy import lazy_exports

_EXPORTS = {
    "PresetServer": "mcp.server",
    "build_server": "mcp.server",
    "serve": "mcp.transport",
    "ServeConfig": "config",
    "PROMPT_NAME": "mcp.wire",
    "PROMPT_URI": "mcp.wire",
    "STATUS_URI": "mcp.wire",
}

__all__ = [
    "PROMPT_NAME",
    "PROMPT_URI",
    "STATUS_URI",
    "PresetServer",
    "ServeConfig",
    "build_server",
    "serve",
]


__getattr__ = lazy_exports(__name__, "agent_presets.server", _EXPORTS, globals())


if TYPE_CHECKING:
    from agent_presets.server.config import ServeConfig
    from agent_presets.server.mcp.server import PresetServer, build_server
    from agent_presets.server.mcp.transport import serve
    from agent_presets.server.mcp.wire import PROMPT_NAME, PROMPT_URI, STATUS_URI
