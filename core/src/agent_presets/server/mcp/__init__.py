"""The MCP server: the only part of the core that imports ``mcp``.

``server`` holds the server class (``PresetServer``, ``build_server``);
``transport`` runs it over stdio or HTTP (``serve``); ``calls`` runs tool
calls on or off the event loop; ``fanout`` carries change notices to every
client; ``sessions`` tells it which HTTP sessions are listening, and the
event store (``eventstore``) which session each stored event belongs to;
``hints`` turns a tool's risk into MCP annotations; ``confirm`` makes risky
calls wait for a person (``serve --confirm``); ``wire`` builds
the dicts that go on the wire. Importing ``mcp`` costs about a second, so
``presets serve`` imports this package inside the command only.
"""

from __future__ import annotations

from agent_presets.server.mcp.server import PresetServer, build_server
from agent_presets.server.mcp.transport import serve
from agent_presets.server.mcp.wire import PROMPT_NAME, PROMPT_URI, STATUS_URI, prompt_text

__all__ = [
    "PROMPT_NAME",
    "PROMPT_URI",
    "STATUS_URI",
    "PresetServer",
    "build_server",
    "prompt_text",
    "serve",
]
