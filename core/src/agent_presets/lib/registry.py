"""PresetRegistry: immutable preset definitions and pure resolution."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_presets.lib.listeners import Listeners
from agent_presets.lib.matching import CompiledPattern, compile_pattern, validate_context
from agent_presets.lib.model import (
    OVERRIDE_STATES,
    ActivePreset,
    DuplicateToolError,
    Preset,
    PresetValidationError,
    PromptFragment,
    Resolution,
    UnknownPresetError,
    duplicate_preset_error,
)
from agent_presets.lib.suggest import did_you_mean

RegistryListener = Callable[[str, Preset], None]
"""``callback(event, preset)`` with event ``"register"`` or ``"unregister"``."""


@dataclass(frozen=True, slots=True)
class _Entry:
    preset: Preset
    auto: bool
    patterns: tuple[CompiledPattern, ...]
    active_by_context: ActivePreset
    active_by_override: ActivePreset
    fragment: PromptFragment | None
    has_members: bool
    """Whether the preset lists prompts or resources."""


def _compile(preset: Preset) -> _Entry:
    return _Entry(
        preset=preset,
        auto=preset.default_state == "auto",
        patterns=tuple(compile_pattern(p) for p in preset.contexts),
        active_by_context=ActivePreset(preset.name, "context", preset.risk),
        active_by_override=ActivePreset(preset.name, "override", preset.risk),
        fragment=PromptFragment(preset.name, preset.system_prompt)
        if preset.system_prompt
        else None,
        has_members=bool(preset.prompts or preset.resources),
    )


class PresetRegistry:
    """Stores presets in registration order and resolves them against a context."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._listeners: Listeners[RegistryListener] = Listeners()
        self.version = 0

    # -- definitions -------------------------------------------------------

    def register(self, preset: Preset) -> None:
        """Add ``preset`` last in resolution order; a taken name is a ``DuplicatePresetError``."""
        if not isinstance(preset, Preset):
            raise PresetValidationError(f"expected a Preset, got {type(preset).__name__}")
        existing = self._entries.get(preset.name)
        if existing is not None:
            raise duplicate_preset_error(
                preset.name, first_source=existing.preset.source, source=preset.source
            )
        self._entries[preset.name] = _compile(preset)
        self.version += 1
        try:
            self._notify("register", preset)
        except Exception:
            # A listener (the manager) refused the new preset: undo, so nothing changed.
            del self._entries[preset.name]
            self.version += 1
            raise

    def unregister(self, name: str) -> Preset:
        """Remove and return the preset ``name``; ``UnknownPresetError`` if absent."""
        entry = self._entries.pop(name, None)
        if entry is None:
            raise UnknownPresetError(f"no preset named {name!r} is registered")
        self.version += 1
        self._notify("unregister", entry.preset)
        return entry.preset

    def get(self, name: str) -> Preset | None:
        """The preset ``name``, or None."""
        entry = self._entries.get(name)
        return entry.preset if entry else None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def list(self) -> builtins.list[Preset]:
        """Every preset, in registration order (the order resolution uses)."""
        return [e.preset for e in self._entries.values()]

    def list_by_group(self, group: str) -> builtins.list[Preset]:
        """The presets whose ``group`` is ``group``, in registration order."""
        return [e.preset for e in self._entries.values() if e.preset.group == group]

    def names(self) -> builtins.list[str]:
        """The preset names, in registration order."""
        return list(self._entries)

    # -- resolution --------------------------------------------------------

    def validate_overrides(self, overrides: Mapping[str, str] | None) -> dict[str, str]:
        """A copy of ``overrides`` without ``auto`` entries; unknown names or states are errors."""
        if overrides is None:
            return {}
        if not isinstance(overrides, Mapping):
            raise PresetValidationError(
                f"overrides must map preset names to on/off/auto, not {type(overrides).__name__}"
            )
        result: dict[str, str] = {}
        for name, state in overrides.items():
            if state not in OVERRIDE_STATES:
                raise PresetValidationError(
                    f"override for {name!r} has state {state!r}; use on, off or auto"
                )
            if name not in self._entries:
                raise UnknownPresetError(self.unknown_message(name))
            if state != "auto":
                result[name] = state
        return result

    def resolve(
        self, context: Mapping[str, Any], overrides: Mapping[str, str] | None = None
    ) -> Resolution:
        """Which presets are active, in registration order, and why. Pure and deterministic."""
        ctx = validate_context(context)
        return self._resolve(ctx, self.validate_overrides(overrides))

    def _resolve(self, ctx: Mapping[str, Any], overrides: Mapping[str, str]) -> Resolution:
        items = frozenset(ctx.items())
        active: builtins.list[ActivePreset] = []
        tool_ids: builtins.list[str] = []
        fragments: builtins.list[PromptFragment] = []
        members: builtins.list[Preset] = []
        for name, entry in self._entries.items():
            state = overrides.get(name) if overrides else None
            if state == "on":
                active.append(entry.active_by_override)
            elif state == "off" or not entry.auto:
                continue
            else:
                for pattern in entry.patterns:
                    if pattern.required <= items and (
                        not pattern.absent or pattern.matches(items, ctx)
                    ):
                        active.append(entry.active_by_context)
                        break
                else:
                    continue
            tool_ids.extend(entry.preset.tool_ids)
            if entry.fragment is not None:
                fragments.append(entry.fragment)
            if entry.has_members:
                members.append(entry.preset)
        if len(set(tool_ids)) != len(tool_ids):
            self._raise_duplicate_tools(active)
        if not members:
            return Resolution(tuple(active), tuple(tool_ids), tuple(fragments))
        # Unlike a tool, a prompt or resource may be listed by several presets: it is
        # served while any of them is active, once.
        prompt_ids = dict.fromkeys(p for preset in members for p in preset.prompts)
        resource_ids = dict.fromkeys(r for preset in members for r in preset.resources)
        return Resolution(
            tuple(active), tuple(tool_ids), tuple(fragments), tuple(prompt_ids), tuple(resource_ids)
        )

    def _raise_duplicate_tools(self, active: builtins.list[ActivePreset]) -> None:
        owner: dict[str, str] = {}
        for a in active:
            for tool_id in self._entries[a.name].preset.tool_ids:
                if tool_id in owner:
                    raise DuplicateToolError(
                        f"tool id {tool_id!r} is provided by both active presets "
                        f"{owner[tool_id]!r} and {a.name!r}; a tool may be active through "
                        "one preset only, so turn one of them off"
                    )
                owner[tool_id] = a.name

    def unknown_message(self, name: object) -> str:
        """Why ``name`` is not a preset here, with the closest registered name if any."""
        hint = did_you_mean(name, self._entries, "`presets list` shows the names")
        return f"no preset named {name!r}{hint}"

    # cli.py still calls the private name; it moves to ``unknown_message``.

    # -- status and listeners ----------------------------------------------

    def status(self) -> dict[str, Any]:
        """Counts by default state and group, and the dangerous presets, as plain data."""
        groups: dict[str, int] = {}
        for e in self._entries.values():
            key = e.preset.group or ""
            groups[key] = groups.get(key, 0) + 1
        return {
            "presets": len(self._entries),
            "auto": sum(1 for e in self._entries.values() if e.auto),
            "off": sum(1 for e in self._entries.values() if not e.auto),
            "dangerous": [e.preset.name for e in self._entries.values() if e.preset.dangerous],
            "groups": groups,
        }

    def add_on_change(self, callback: RegistryListener) -> None:
        """Call ``callback(event, preset)`` after each register or unregister."""
        self._listeners.add(callback)

    def remove_on_change(self, callback: RegistryListener) -> None:
        """Stop calling ``callback`` (added before; ``KeyError`` otherwise)."""
        self._listeners.remove(callback)

    def _notify(self, event: str, preset: Preset) -> None:
        self._listeners.notify(event, preset)
