"""MCP tool annotations from a tool's effective risk, refined by the adapter's own.

The rule lives in the library (``agent_presets.lib.toolwire``), where
``presets budget`` builds the same ``tools/list`` entries the server sends;
this module keeps the server's name for it.
"""

from __future__ import annotations

from agent_presets.lib.toolwire import READ_ONLY_HINTS, RISK_HINTS, annotations_for

__all__ = ["READ_ONLY_HINTS", "RISK_HINTS", "annotations_for"]
