"""Why a tool is or is not available now, and what would make it available.

Used by ``presets explain`` and by the MCP server when a client calls a tool
that exists in some preset but is not active.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_presets.lib.adapters import ToolAdapter, ToolAdapterRegistry
from agent_presets.lib.manager import PresetManager
from agent_presets.lib.model import ANY, NONE, Preset
from agent_presets.lib.registry import PresetRegistry

_MISSING = object()


@dataclass(frozen=True)
class PresetVerdict:
    preset: str
    risk: str
    default_state: str
    active: bool
    reason: str
    """Why it is active or not, one sentence."""
    enable: str | None
    """What would turn it on (None when it is active)."""
    override: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "risk": self.risk,
            "default_state": self.default_state,
            "active": self.active,
            "reason": self.reason,
            "enable": self.enable,
            "override": self.override,
        }


@dataclass(frozen=True)
class ToolExplanation:
    query: str
    tool_id: str | None
    mcp_name: str | None
    active: bool
    presets: tuple[PresetVerdict, ...] = field(default=())

    @property
    def known(self) -> bool:
        return self.tool_id is not None

    def message(self) -> str:
        """One paragraph for a person or a model."""
        if not self.known:
            return f"no installed plugin provides a tool named {self.query!r}"
        name = self.mcp_name or self.tool_id
        if not self.presets:
            return f"tool {name!r} exists but no preset includes it, so it is never active"
        if self.active:
            on = next(v for v in self.presets if v.active)
            return f"tool {name!r} is active through preset {on.preset!r}: {on.reason}"
        parts = [
            f"preset {v.preset!r}, which is inactive because {v.reason}. To enable it: {v.enable}"
            for v in self.presets
        ]
        return f"tool {name!r} is not active now. It is provided by " + " Or by ".join(parts) + "."

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "tool_id": self.tool_id,
            "mcp_name": self.mcp_name,
            "active": self.active,
            "presets": [v.to_dict() for v in self.presets],
            "message": self.message(),
        }


def find_adapter(adapters: ToolAdapterRegistry, tool: str) -> ToolAdapter | None:
    """The adapter for a tool id or MCP name (the first, for a shared MCP name)."""
    return adapters.find(tool)


def presets_providing(registry: PresetRegistry, tool_ids: Collection[str]) -> list[Preset]:
    """The presets that list any of ``tool_ids``, in registration order, active or not."""
    wanted = set(tool_ids)
    return [p for p in registry.list() if not wanted.isdisjoint(p.tool_ids)]


def explain_tool(manager: PresetManager, tool: str) -> ToolExplanation:
    adapters = manager.tool_adapters
    matching = [a for a in adapters.list() if tool in (a.id, adapters.mcp_name(a))]
    if not matching:
        return ToolExplanation(query=tool, tool_id=None, mcp_name=None, active=False)
    ids = {a.id for a in matching}
    resolution = manager.resolve()
    active = {a.name: a for a in resolution.active_presets}
    overrides = manager.get_overrides()
    context = manager.get_context()
    verdicts = [
        _verdict(preset, active.get(preset.name), overrides.get(preset.name), context)
        for preset in presets_providing(manager.registry, ids)
    ]
    verdicts.sort(key=lambda v: not v.active)
    active_ids = ids.intersection(resolution.tool_ids)
    chosen = next((a for a in matching if a.id in active_ids), matching[0])
    return ToolExplanation(
        query=tool,
        tool_id=chosen.id,
        mcp_name=adapters.mcp_name(chosen),
        active=bool(active_ids),
        presets=tuple(verdicts),
    )


def preset_verdicts(manager: PresetManager, presets: Iterable[Preset]) -> list[PresetVerdict]:
    """Whether each of ``presets`` is active now, why, and what would turn it on.

    ``explain_tool``'s verdicts, for presets already found (``presets_search``
    ranks tools and asks only about the presets of its results).
    """
    resolution = manager.resolve()
    active = {a.name: a for a in resolution.active_presets}
    overrides = manager.get_overrides()
    context = manager.get_context()
    return [
        _verdict(preset, active.get(preset.name), overrides.get(preset.name), context)
        for preset in presets
    ]


def explain_member(manager: PresetManager, field: str, member_id: str) -> list[PresetVerdict]:
    """Each preset that lists a prompt or resource (``field``: ``prompts`` or ``resources``).

    The same verdicts as a tool's, so a prompt or resource that is not served
    answers what would serve it as a tool does; active ones first.
    """
    resolution = manager.resolve()
    active = {a.name: a for a in resolution.active_presets}
    overrides = manager.get_overrides()
    context = manager.get_context()
    verdicts = [
        _verdict(preset, active.get(preset.name), overrides.get(preset.name), context)
        for preset in manager.registry.list()
        if member_id in getattr(preset, field)
    ]
    verdicts.sort(key=lambda v: not v.active)
    return verdicts


def _verdict(
    preset: Preset, active: Any, override: str | None, context: Mapping[str, Any]
) -> PresetVerdict:
    def verdict(reason: str, enable: str | None) -> PresetVerdict:
        return PresetVerdict(
            preset=preset.name,
            risk=preset.risk,
            default_state=preset.default_state,
            active=enable is None,
            reason=reason,
            enable=enable,
            override=override,
        )

    if active is not None:
        if active.reason == "override":
            return verdict("forced on by a session override", None)
        return verdict("the current context matches " + describe_patterns(preset), None)
    enable_override = f"turn on preset {preset.name!r} (session override {preset.name}=on)"
    if override == "off":
        back = "on" if preset.default_state == "off" else "auto or on"
        return verdict(
            "forced off by a session override", f"set preset {preset.name!r} back to {back}"
        )
    if preset.default_state == "off":
        return verdict(f"it is off by default (risk: {preset.risk})", enable_override)
    if not preset.contexts:
        return verdict("it has no contexts", enable_override)
    missing = [_difference(p, context) for p in preset.contexts]
    return verdict(
        "the current context does not match " + describe_patterns(preset),
        ", or ".join(missing) + f", or {enable_override}",
    )


def describe_pattern(pattern: Mapping[str, Any]) -> str:
    parts = []
    for key, value in pattern.items():
        if value == ANY:
            parts.append(f"any {key}")
        elif value is None or value == NONE:
            parts.append(f"no {key}")
        else:
            parts.append(f"{key}={_fmt(value)}")
    return "{" + ", ".join(parts) + "}"


def describe_patterns(preset: Preset) -> str:
    return " or ".join(describe_pattern(p) for p in preset.contexts) or "{}"


def _difference(pattern: Mapping[str, Any], context: Mapping[str, Any]) -> str:
    needs = []
    for key, value in pattern.items():
        if value == ANY:
            continue
        if value is None or value == NONE:
            if context.get(key) is not None:
                needs.append("clear the activity" if key == "activity" else f"clear {key}")
        elif context.get(key, _MISSING) != value:
            needs.append(_need(key, value))
    return " and ".join(needs) if needs else describe_pattern(pattern)


def _need(key: str, value: Any) -> str:
    if key == "surface":
        return f"switch to the {value} surface"
    if key == "activity":
        return "clear the activity" if value is None else f"set the activity to {_fmt(value)}"
    if key == "canvas_visible":
        return "show the canvas" if value else "hide the canvas"
    return f"have {key}={_fmt(value)}"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
