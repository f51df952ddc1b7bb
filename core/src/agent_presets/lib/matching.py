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

from agent_presets.lib.model import ANY, FIELD_RE, NONE, PresetValidationError

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
            absent.append(key)
            continue
        required.add((key, value))
    return CompiledPattern(frozenset(required), tuple(absent))


def matches(pattern: Mapping[str, Any], context: Mapping[str, Any]) -> bool:
    """Whether ``pattern`` matches ``context`` (a validated context)."""
    ctx = validate_context(context)
    return compile_pattern(pattern).matches(frozenset(ctx.items()), ctx)


def validate_context(context: object) -> Context:
    """A copy of ``context``, or a ``PresetValidationError`` saying what is wrong.

    Only the shape is checked here: snake_case keys and scalar values. Which
    fields exist and which values they take is the declared vocabulary's
    business (``agent_presets.lib.vocabulary``): the core names no field itself.
    """
    if not isinstance(context, Mapping):
        raise PresetValidationError(
            f"context must be a mapping of field names to values, not {type(context).__name__}"
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
    return result
