"""MCP tool annotations from a preset's risk, refined by the adapter's own.

MCP's defaults assume the worst (an unannotated tool is destructive and
open-world), so every preset tool states its hints: dangerous risks are
destructive, ``shell`` also reaches the open world, everything else is
neither. ``readOnlyHint`` comes only from an adapter that says it only reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agent_presets.model import RISKS

if TYPE_CHECKING:
    from agent_presets.bootstrap import Presets

RISK_HINTS: Final[Mapping[str, Mapping[str, bool]]] = {
    "normal": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-read": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-write": {"destructiveHint": True, "openWorldHint": False},
    "destructive": {"destructiveHint": True, "openWorldHint": False},
    "shell": {"destructiveHint": True, "openWorldHint": True},
}

_RANK: Final = {risk: i for i, risk in enumerate(RISKS)}


def risk_map(presets: Presets) -> tuple[dict[str, str], dict[str, str]]:
    """``(tool id -> risk, MCP name -> risk)``; a tool in several presets takes the highest."""
    by_id: dict[str, str] = {}
    for preset in presets.registry.list():
        for tool_id in preset.tool_ids:
            if tool_id not in by_id or _RANK[preset.risk] > _RANK[by_id[tool_id]]:
                by_id[tool_id] = preset.risk
    by_name: dict[str, str] = {}
    for adapter in presets.tool_adapters.list():
        risk = by_id.get(adapter.id)
        if risk is not None and (
            adapter.mcp_name not in by_name or _RANK[risk] > _RANK[by_name[adapter.mcp_name]]
        ):
            by_name[adapter.mcp_name] = risk
    return by_id, by_name


def annotations_for(risk: str | None, own: Mapping[str, Any]) -> dict[str, Any]:
    """The hints for a tool of ``risk`` (None: in no preset), with the tool's own on top."""
    hints: dict[str, Any] = dict(RISK_HINTS.get(risk, {})) if risk is not None else {}
    hints.update(own)
    return hints
