"""The MCP server's old import path, kept for code that imports it.

The server lives in ``agent_presets.mcpserver``; this module only re-exports
its public names.
"""

from __future__ import annotations

from agent_presets.mcpserver import (
    PROMPT_NAME,
    PROMPT_URI,
    STATUS_URI,
    PresetServer,
    build_server,
    serve,
)

__all__ = [
    "PROMPT_NAME",
    "PROMPT_URI",
    "STATUS_URI",
    "PresetServer",
    "build_server",
    "serve",
]
