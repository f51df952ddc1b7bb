"""Why a tool is not available right now, in words a model can act on.

A model that calls a tool from an earlier tool list (or from its training)
should learn what would make the tool appear - the context a preset needs or
the override that enables it - instead of reading "unknown tool".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agent_presets.model import ANY, NONE, Preset

if TYPE_CHECKING:
    from agent_presets.bootstrap import Presets


def explain_unavailable(name: str, presets: Presets) -> str:
    """The message for a call to ``name`` when the tool registry does not hold it."""
    tool_ids = [a.id for a in presets.tool_adapters.list() if a.mcp_name == name]
    if not tool_ids:
        return _unknown(name, presets)
    providers = [p for p in presets.registry.list() if any(t in p.tool_ids for t in tool_ids)]
    if not providers:
        return (
            f"Tool {name!r} is installed but no preset includes it, so it is never offered; "
            "use one of the tools in the current tool list instead."
        )
    manager = presets.manager
    overrides = manager.get_overrides()
    context = manager.get_context()
    active = {a.name for a in manager.get_active_presets()}
    reasons = [_why_off(p, overrides.get(p.name), active, context) for p in providers]
    return f"Tool {name!r} is not available right now. " + " ".join(reasons)


def _unknown(name: str, presets: Presets) -> str:
    known = {a.mcp_name for a in presets.tool_adapters.list()} | set(presets.tool_registry.names())
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (
        f"Unknown tool {name!r}: no installed plugin provides it.{hint} "
        "List the tools to see what is available."
    )


def _why_off(
    preset: Preset, override: str | None, active: set[str], context: Mapping[str, Any]
) -> str:
    where = f"It comes from preset {preset.name!r} (risk: {preset.risk})"
    if override == "off":
        return (
            f"{where}, which the user turned off for this session (override {preset.name}=off); "
            "only the user can turn it back on."
        )
    if preset.name in active:
        return (
            f"{where}, which is active, but another active tool holds the same name; "
            "this is a configuration problem to report to the user."
        )
    if preset.default_state == "off":
        return (
            f"{where}, which is off by default and turns on only when the user enables it "
            f"with the override {preset.name}=on (for `presets serve`: --on {preset.name}). "
            "Ask the user to enable it if the task needs it; a tool call cannot."
        )
    conditions = " or ".join(describe_pattern(p) for p in preset.contexts)
    actions = " or ".join(describe_action(p) for p in preset.contexts)
    now = describe_context(context, _fields(preset.contexts))
    return (
        f"{where}, which turns on when {conditions}; the context now has {now}. "
        f"To use it, {actions}, then list the tools again."
    )


def _fields(patterns: Iterable[Mapping[str, Any]]) -> list[str]:
    fields = ["surface", "activity"]
    for pattern in patterns:
        fields.extend(k for k in pattern if k not in fields)
    return fields


def _value(field: str, value: Any) -> str:
    if field == "canvas_visible":
        return "the canvas visible" if value is True else "the canvas hidden"
    if field == "activity" and (value is None or value == NONE):
        return "no activity"
    if value is None or value == NONE:
        return f"no {field}"
    shown = f"'{value}'" if isinstance(value, str) else str(value).lower()
    return f"{field.replace('_', ' ')} {shown}"


def describe_pattern(pattern: Mapping[str, Any]) -> str:
    """``{surface: canvas, activity: drawing}`` -> "surface 'canvas' with activity 'drawing'"."""
    parts = [_value(k, v) for k, v in pattern.items() if v != ANY]
    if not parts:
        return "any context"
    return "the context has " + _join(parts)


def describe_action(pattern: Mapping[str, Any]) -> str:
    """What to do to reach ``pattern``: "switch to surface 'canvas' with activity 'drawing'"."""
    fields = {k: v for k, v in pattern.items() if v != ANY}
    surface = fields.pop("surface", None)
    rest = [_value(k, v) for k, v in fields.items()]
    if surface is not None:
        head = f"switch to surface '{surface}'"
        return head + (" with " + _join(rest) if rest else "")
    if not rest:
        return "call it again"
    return "set " + _join(rest)


def describe_context(context: Mapping[str, Any], fields: Iterable[str]) -> str:
    return _join([_value(f, context.get(f)) for f in fields])


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]
