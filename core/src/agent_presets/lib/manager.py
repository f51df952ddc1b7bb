"""PresetManager: live context, session overrides, the cached resolution, notifications."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from agent_presets.lib.adapters import ToolAdapterRegistry
from agent_presets.lib.listeners import Listeners
from agent_presets.lib.matching import Context, validate_context
from agent_presets.lib.model import (
    OVERRIDE_STATES,
    RISKS,
    ActivePreset,
    DuplicateToolError,
    Preset,
    PresetValidationError,
    PromptFragment,
    Resolution,
    ToolDef,
    UnknownPresetError,
    effective_risk,
)
from agent_presets.lib.prompts import fill_placeholders, fill_values
from agent_presets.lib.registry import PresetRegistry
from agent_presets.lib.vocabulary import Vocabulary

ChangeListener = Callable[[Resolution], None]
_MEMO_SIZE = 64


class PresetManager:
    """The one place the context and overrides change, so caches and listeners stay right.

    Listeners hear about a change only when the active presets, their reasons,
    the tool ids, the prompt fragments or the overrides change: a context field
    no pattern cares about changes nothing they can see.

    ``vocabulary`` (the declared context fields, which ``bootstrap`` passes)
    makes ``set_context`` refuse a value no one declared. The first context
    is not checked: it is the host's saved state, and refusing it (a plugin
    that declared an activity has since been uninstalled) would stop the
    host from starting at all.
    """

    def __init__(
        self,
        registry: PresetRegistry,
        tool_adapters: ToolAdapterRegistry,
        app: Any,
        context: Mapping[str, Any],
        overrides: Mapping[str, str] | None = None,
        *,
        owner: str = "agent-presets",
        vocabulary: Vocabulary | None = None,
    ) -> None:
        self.registry = registry
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        self.tool_adapters = tool_adapters
        self.app = app
        self.owner = owner
        self._lock = threading.RLock()
        self._listeners: Listeners[ChangeListener] = Listeners()
        self._context: Context = validate_context(context)
        self._overrides: dict[str, str] = registry.validate_overrides(overrides)
        for name, state in self._overrides.items():
            if state == "on":
                self._check_ready(name)
        self._memo: OrderedDict[tuple[Any, ...], Resolution] = OrderedDict()
        # One object per distinct resolution, however many contexts (principals) give it,
        # and its tool defs: 10,000 principals in two activities hold two of each.
        self._interned: weakref.WeakValueDictionary[Resolution, Resolution] = (
            weakref.WeakValueDictionary()
        )
        self._defs_of: weakref.WeakKeyDictionary[
            Resolution, tuple[tuple[int, int], tuple[ToolDef, ...]]
        ] = weakref.WeakKeyDictionary()
        self._resolution = self._compute(self._context, self._overrides)
        self._tool_defs: tuple[ToolDef, ...] | None = None
        self._tool_def_cache: dict[str, ToolDef] = {}
        self._adapters_version = -1
        registry.add_on_change(self._registry_changed)

    # -- definitions -------------------------------------------------------

    def register(self, preset: Preset) -> None:
        """Register a preset; the manager re-resolves, and a preset it would refuse is undone."""
        self.registry.register(preset)

    def unregister(self, name: str) -> None:
        """Remove the preset ``name`` (``UnknownPresetError`` if absent) and re-resolve."""
        self.registry.unregister(name)

    # -- context and overrides ---------------------------------------------

    def set_context(self, context: Mapping[str, Any]) -> None:
        """Make ``context`` current; a value the vocabulary does not allow, or a context
        without a required field, is refused (``PresetValidationError``) and changes nothing."""
        new_context = validate_context(context)
        self.vocabulary.check_context(new_context)
        with self._lock:
            if new_context == self._context:
                return
            resolution = self._compute(new_context, self._overrides)
            defs = self._tool_defs_for(resolution)
            self._context = new_context
            self._commit(resolution, defs, overrides_changed=False)

    def get_context(self) -> Context:
        """A copy of the context snapshot the current resolution was made from."""
        return dict(self._context)

    def set_override(self, name: str, state: str) -> None:
        """Force ``name`` on or off for this session, or return it to ``auto``."""
        if state not in OVERRIDE_STATES:
            raise PresetValidationError(
                f"override state {state!r} for {name!r} is not one of: on, off, auto"
            )
        with self._lock:
            if name not in self.registry:
                raise UnknownPresetError(self.registry.unknown_message(name))
            overrides = dict(self._overrides)
            if state == "auto":
                overrides.pop(name, None)
            else:
                overrides[name] = state
            if overrides == self._overrides:
                return
            if state == "on":
                self._check_ready(name)
            resolution = self._compute(self._context, overrides)
            defs = self._tool_defs_for(resolution)
            self._overrides = overrides
            self._commit(resolution, defs, overrides_changed=True)

    def _check_ready(self, name: str) -> None:
        """Refuse to turn on ``name`` while a runtime its tools need cannot serve them."""
        preset = self.registry.get(name)
        for tool_id in preset.tool_ids if preset is not None else ():
            problem = self.tool_adapters.readiness_problem(tool_id, self.app)
            if problem is not None:
                raise PresetValidationError(f"preset {name!r} cannot be turned on: {problem}")

    def get_overrides(self) -> dict[str, str]:
        """A copy of the session overrides: preset name -> ``on`` or ``off``."""
        return dict(self._overrides)

    # -- results -----------------------------------------------------------

    def resolve(self) -> Resolution:
        """The cached resolution (immutable)."""
        return self._resolution

    def get_active_presets(self) -> list[ActivePreset]:
        """The active presets, in registration order, each with why it is on."""
        return list(self._resolution.active_presets)

    def get_prompt_fragments(self) -> list[PromptFragment]:
        """The active presets' prompt fragments, in the same order."""
        return list(self._resolution.prompt_fragments)

    def get_tool_defs(self) -> list[ToolDef]:
        """Full MCP tool definitions for the active tool ids, stamped with this owner."""
        with self._lock:
            if self._tool_defs is None or self._adapters_version != self.tool_adapters.version:
                self._tool_defs = self._tool_defs_for(self._resolution)
            return list(self._tool_defs)

    def status(self) -> dict[str, Any]:
        """Context, overrides, active presets and tool ids as plain data, for status displays."""
        r = self._resolution
        return {
            "context": self.get_context(),
            "overrides": self.get_overrides(),
            "active_presets": [a.name for a in r.active_presets],
            "tool_ids": list(r.tool_ids),
            "registry": self.registry.status(),
        }

    # -- another context: a principal's ------------------------------------

    def check_context(self, context: Mapping[str, Any]) -> Context:
        """``context`` checked as ``set_context`` checks it, without making it current."""
        checked = validate_context(context)
        self.vocabulary.check_context(checked)
        return checked

    def check_override(self, name: str, state: str) -> None:
        """Refuse what ``set_override(name, state)`` would refuse, changing nothing."""
        if state not in OVERRIDE_STATES:
            raise PresetValidationError(
                f"override state {state!r} for {name!r} is not one of: on, off, auto"
            )
        if name not in self.registry:
            raise UnknownPresetError(self.registry.unknown_message(name))
        if state == "on":
            self._check_ready(name)

    def resolve_for(
        self, context: Mapping[str, Any], overrides: Mapping[str, str]
    ) -> tuple[Resolution, tuple[ToolDef, ...]]:
        """The resolution and tool defs of another context and overrides, left uncurrent.

        What a server serves a principal with a context of its own: the same
        rules, memo and tool defs as the current resolution, so two principals
        in one context share one resolution. An override of a preset that is
        no longer registered is left out (it was checked when it was set).
        """
        ctx = validate_context(context)
        with self._lock:
            kept = {k: v for k, v in overrides.items() if k in self.registry and v != "auto"}
            resolution = self._compute(ctx, kept)
            versions = (self.registry.version, self.tool_adapters.version)
            held = self._defs_of.get(resolution)
            if held is None or held[0] != versions:
                held = (versions, self._tool_defs_for(resolution))
                self._defs_of[resolution] = held
            return resolution, held[1]

    # -- listeners ---------------------------------------------------------

    def add_on_change(self, callback: ChangeListener) -> None:
        """Call ``callback(resolution)`` when the result or the overrides change."""
        self._listeners.add(callback)

    def remove_on_change(self, callback: ChangeListener) -> None:
        """Stop calling ``callback`` (added before; ``KeyError`` otherwise)."""
        self._listeners.remove(callback)

    # -- internals ---------------------------------------------------------

    def _compute(self, context: Context, overrides: dict[str, str]) -> Resolution:
        key = (
            self.registry.version,
            self.tool_adapters.version,
            frozenset(context.items()),
            frozenset(overrides.items()),
        )
        cached = self._memo.get(key)
        if cached is not None:
            self._memo.move_to_end(key)
            return cached
        resolution = self._fill_prompts(self.registry._resolve(context, overrides))
        resolution = self._interned.setdefault(resolution, resolution)
        self._memo[key] = resolution
        if len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return resolution

    def _fill_prompts(self, resolution: Resolution) -> Resolution:
        """The resolution with each prompt's ``{{tool.id}}`` replaced by the tool's MCP name
        and each ``{{values:FIELD}}`` by the field's declared values."""
        fragments = resolution.prompt_fragments
        if not any("{{" in f.prompt for f in fragments):
            return resolution
        name_of = self.tool_adapters.mcp_name_of

        def fill(text: str) -> str:
            return fill_values(fill_placeholders(text, name_of), self._declared_values)

        filled = tuple(replace(f, prompt=fill(f.prompt)) for f in fragments)
        return replace(resolution, prompt_fragments=filled)

    def _declared_values(self, name: str) -> str | None:
        """A field's declared values as a prompt lists them: ``'drawing', 'graph'``."""
        declared = self.vocabulary.get(name)
        if declared is None:
            return None
        if declared.type == "boolean":
            return "true, false"
        if declared.values is None:
            return "any name"
        return ", ".join(repr(v) for v in declared.values) or "none"

    def _commit(
        self, resolution: Resolution, defs: tuple[ToolDef, ...], *, overrides_changed: bool
    ) -> None:
        """Make a checked resolution current and tell the listeners (all of them)."""
        if resolution == self._resolution and not overrides_changed:
            return
        self._resolution = resolution
        self._tool_defs = defs
        self._listeners.notify(resolution)

    def _registry_changed(self, event: str, preset: Preset) -> None:
        # Raising here makes the registry undo the change: nothing is committed.
        with self._lock:
            overrides = self._overrides
            if event == "unregister" and preset.name in overrides:
                overrides = {k: v for k, v in overrides.items() if k != preset.name}
            resolution = self._compute(self._context, overrides)
            defs = self._tool_defs_for(resolution)
            changed = overrides != self._overrides
            self._overrides = overrides
            self._commit(resolution, defs, overrides_changed=changed)

    def _tool_defs_for(self, resolution: Resolution) -> tuple[ToolDef, ...]:
        """The tool defs of a resolution; raises (changing nothing) if they cannot be built.

        Each def carries the active preset that provides it and its effective
        risk (see ``ToolDef``). The resolution already refuses a tool id in two
        active presets; were one ever in several, the highest risk would win,
        so a tool is never presented as safer than a preset that provides it.
        """
        if self._adapters_version != self.tool_adapters.version:
            self._tool_def_cache.clear()
            self._adapters_version = self.tool_adapters.version
        provider: dict[str, ActivePreset] = {}
        for active in resolution.active_presets:
            preset = self.registry.get(active.name)
            for tool_id in preset.tool_ids if preset is not None else ():
                held = provider.get(tool_id)
                if held is None or RISKS.index(active.risk) > RISKS.index(held.risk):
                    provider[tool_id] = active
        defs: list[ToolDef] = []
        sources: dict[str, str] = {}
        for tool_id in resolution.tool_ids:
            active = provider[tool_id]
            cached = self._tool_def_cache.get(tool_id)
            base = cached or self.tool_adapters.resolve(tool_id, self.app)
            adapter = self.tool_adapters.get(tool_id)
            # An upstream's hints are floored at the preset's risk; a plugin's stand.
            hints = adapter.served_hints(active.risk) if adapter is not None else base.annotations
            # A read-only tool changes nothing, whatever its preset may do.
            risk = effective_risk(active.risk, hints)
            if (
                cached is not None
                and (cached.preset, cached.risk) == (active.name, risk)
                and cached.annotations == hints
            ):
                tool_def = cached
            else:
                tool_def = replace(
                    base,
                    annotations=MappingProxyType(dict(hints)),
                    managed_owner=self.owner,
                    managed_source=tool_id,
                    preset=active.name,
                    risk=risk,
                )
                self._tool_def_cache[tool_id] = tool_def
            previous = sources.get(tool_def.name)
            if previous is not None:
                raise DuplicateToolError(
                    f"MCP tool name {tool_def.name!r} is provided by both {previous!r} and "
                    f"{tool_id!r}, which are active at once; an MCP call names a tool only, so "
                    "turn off one of the presets that provide them"
                )
            sources[tool_def.name] = tool_id
            defs.append(tool_def)
        return tuple(defs)
