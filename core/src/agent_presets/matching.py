"""Context snapshots and the patterns that match them.

A pattern matches when every field it names matches the context: missing
fields are wildcards, ``any`` matches anything, ``none`` (or null) matches
only a missing or None value, and other values compare with ``==``.

Patterns compile to a frozenset of required (field, value) pairs, so a match
is one C-level subset test against the context's items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_presets.model import ANY, FIELD_RE, NONE, PresetValidationError

Context = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CompiledPattern:
    required: frozenset[tuple[str, Any]]
    absent: tuple[str, ...]

    def matches(self, items: frozenset[tuple[str, Any]], context: Mapping[str, Any]) -> bool:
        if not self.required <= items:
            return False
        return all(context.get(key) is None for key in self.absent)


def compile_pattern(pattern: Mapping[str, Any]) -> CompiledPattern:
    required: set[tuple[str, Any]] = set()
    absent: list[str] = []
    for key, value in pattern.items():
        if value == ANY:
            continue
        if value is None or value == NONE:
            # activity is always present in a validated context (None when no activity).
            if key == "activity":
                required.add((key, None))
            else:
                absent.append(key)
            continue
        required.add((key, value))
    return CompiledPattern(frozenset(required), tuple(absent))


def matches(pattern: Mapping[str, Any], context: Mapping[str, Any]) -> bool:
    """Whether ``pattern`` matches ``context`` (a validated context)."""
    ctx = validate_context(context)
    return compile_pattern(pattern).matches(frozenset(ctx.items()), ctx)


def validate_context(context: object) -> Context:
    """A normalised copy of ``context``, or a ``PresetValidationError`` saying what is wrong."""
    if not isinstance(context, Mapping):
        raise PresetValidationError(
            "context must be a mapping with surface and canvas_visible, "
            f"not {type(context).__name__}"
        )
    surface = context.get("surface")
    if not isinstance(surface, str) or not surface:
        raise PresetValidationError(
            f"context field 'surface' is required and must be a non-empty string, got {surface!r}"
        )
    if surface in (ANY, NONE):
        raise PresetValidationError(
            f"context field 'surface' cannot be {surface!r}: that word is reserved for patterns"
        )
    visible = context.get("canvas_visible")
    if not isinstance(visible, bool):
        raise PresetValidationError(
            f"context field 'canvas_visible' is required and must be true or false, got {visible!r}"
        )
    activity = context.get("activity")
    if activity is not None and (not isinstance(activity, str) or not activity):
        raise PresetValidationError(
            f"context field 'activity' must be a non-empty string or None, got {activity!r}"
        )
    if activity in (ANY, NONE):
        raise PresetValidationError(
            f"context field 'activity' cannot be {activity!r}: use None for no activity"
        )
    result: Context = {}
    for key, value in context.items():
        if not isinstance(key, str) or not FIELD_RE.match(key):
            raise PresetValidationError(f"context field name {key!r} must be snake_case")
        if not (value is None or isinstance(value, str | int | float | bool)):
            raise PresetValidationError(
                f"context field {key!r} must be a string, number, boolean or None, "
                f"not {type(value).__name__}"
            )
        result[key] = value
    result.setdefault("activity", None)
    return result
