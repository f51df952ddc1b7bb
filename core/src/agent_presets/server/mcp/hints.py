"""MCP tool annotations from a tool's effective risk, refined by the adapter's own.

MCP's defaults assume the worst (an unannotated tool is destructive and
open-world), so every preset tool states its hints: dangerous risks are
destructive, ``shell`` also reaches the open world, everything else is
neither. A read-only tool (``ToolDef.risk`` None) is read-only and
non-destructive whatever its preset's risk. A host's own tool (no preset)
keeps only the hints it gives itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from agent_presets.model import ToolDef

RISK_HINTS: Final[Mapping[str, Mapping[str, bool]]] = {
    "normal": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-read": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-write": {"destructiveHint": True, "openWorldHint": False},
    "destructive": {"destructiveHint": True, "openWorldHint": False},
    "shell": {"destructiveHint": True, "openWorldHint": True},
}

READ_ONLY_HINTS: Final[Mapping[str, bool]] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "openWorldHint": False,
}


def annotations_for(tool: ToolDef) -> dict[str, Any]:
    """The hints for ``tool``: from its risk (see the module docstring), its own on top."""
    if tool.preset is None:
        hints: dict[str, Any] = {}
    elif tool.risk is None:
        hints = dict(READ_ONLY_HINTS)
    else:
        hints = dict(RISK_HINTS[tool.risk])
    hints.update(tool.annotations)
    return hints
