"""The context vocabulary: which context fields exist and which values they take.

The core names no context field itself. Plugins and the host declare fields
through the ``presets_context_fields`` hook; the declarations merge into one
``Vocabulary``, against which preset patterns are checked when the catalog is
loaded and contexts when the host changes one. A field declared by several
sources takes the union of their values (any string, if one of them allows
any); two types for one field are an error naming both sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_presets.model import ANY, FIELD_RE, NONE, PresetValidationError
from agent_presets.suggest import did_you_mean

FieldType = Literal["string", "boolean"]
FIELD_TYPES: Final = ("string", "boolean")
DECLARATION_KEYS: Final = frozenset({"name", "type", "values", "description"})


@dataclass(frozen=True)
class ContextField:
    """One declared context field. ``values`` None means any string (or, for a boolean, both)."""

    name: str
    type: FieldType = "string"
    values: tuple[str, ...] | None = None
    description: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The declaration as a mapping, as ``presets_context_fields`` may return it."""
        return {
            "name": self.name,
            "type": self.type,
            "values": None if self.values is None else list(self.values),
            "description": self.description,
        }


ContextFieldDeclaration = ContextField | Mapping[str, Any]
"""What ``presets_context_fields`` returns items of: a ``ContextField`` or a mapping of its keys."""


def parse_declaration(declaration: object, source: str) -> ContextField:
    """A checked ``ContextField`` from one hook result item, or an error naming ``source``."""
    if isinstance(declaration, ContextField):
        data: Mapping[str, Any] = declaration.to_dict()
    elif isinstance(declaration, Mapping):
        data = declaration
    else:
        raise PresetValidationError(
            f"plugin {source!r}: presets_context_fields returned {type(declaration).__name__}; "
            "return mappings with name, type, values and description",
            source=source,
        )
    name = data.get("name")
    where = f"plugin {source!r}: context field {name!r}"
    if not isinstance(name, str) or not FIELD_RE.match(name):
        raise PresetValidationError(
            f"{where}: the name must be snake_case, like 'surface'", source=source
        )
    unknown = set(data) - DECLARATION_KEYS
    if unknown:
        raise PresetValidationError(
            f"{where}: unknown key(s) {sorted(unknown)}; use {sorted(DECLARATION_KEYS)}",
            source=source,
        )
    kind = data.get("type", "string")
    if kind not in FIELD_TYPES:
        raise PresetValidationError(
            f"{where}: type {kind!r} must be 'string' or 'boolean'", source=source
        )
    values = data.get("values")
    if values is not None:
        if isinstance(values, str | bytes) or not isinstance(values, Iterable):
            raise PresetValidationError(
                f"{where}: values must be a list of strings, or null for any", source=source
            )
        values = tuple(values)
        bad = [v for v in values if not isinstance(v, str) or not v or v in (ANY, NONE)]
        if bad:
            raise PresetValidationError(
                f"{where}: value {bad[0]!r} cannot be declared; values are non-empty strings "
                f"other than {ANY!r} and {NONE!r}, which patterns reserve",
                source=source,
            )
        if kind == "boolean":
            raise PresetValidationError(
                f"{where}: a boolean field takes true and false; leave values out", source=source
            )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PresetValidationError(f"{where}: description must be a string", source=source)
    return ContextField(name, kind, values, description, (source,))


class Vocabulary:
    """The merged declarations: field name -> ``ContextField``.

    An empty vocabulary (nothing declared anything: an embedding written
    before the hook existed) checks nothing, so such a host keeps working.
    """

    def __init__(self, fields: Iterable[ContextField] = ()) -> None:
        self.fields: dict[str, ContextField] = {f.name: f for f in fields}

    def __bool__(self) -> bool:
        return bool(self.fields)

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    def get(self, name: str) -> ContextField | None:
        return self.fields.get(name)

    @classmethod
    def merge(
        cls, declarations: Iterable[tuple[str, object]]
    ) -> tuple[Vocabulary, list[PresetValidationError]]:
        """Merge ``(source, declaration)`` pairs; a bad or conflicting one is a problem, skipped."""
        merged: dict[str, ContextField] = {}
        problems: list[PresetValidationError] = []
        for source, declaration in declarations:
            try:
                new = parse_declaration(declaration, source)
            except PresetValidationError as exc:
                problems.append(exc)
                continue
            old = merged.get(new.name)
            if old is None:
                merged[new.name] = new
                continue
            if old.type != new.type:
                problems.append(
                    PresetValidationError(
                        f"context field {new.name!r} is declared as {old.type} by "
                        f"{', '.join(old.sources)} and as {new.type} by {source}; "
                        "a field has one type: change or leave out one declaration",
                        source=source,
                    )
                )
                continue
            values: tuple[str, ...] | None = None
            if old.values is not None and new.values is not None:
                values = old.values + tuple(v for v in new.values if v not in old.values)
            merged[new.name] = ContextField(
                new.name,
                old.type,
                values,
                old.description or new.description,
                (*old.sources, source),
            )
        return cls(merged.values()), problems

    # -- checks --------------------------------------------------------------

    def pattern_problems(self, pattern: Mapping[str, Any]) -> list[tuple[str, bool, str]]:
        """``(key, on_key, message)`` for each undeclared key or value of a preset pattern.

        ``on_key`` says whether the message is about the key itself (else its value).
        """
        if not self:
            return []
        problems: list[tuple[str, bool, str]] = []
        for key, value in pattern.items():
            declared = self.fields.get(key)
            if declared is None:
                hint = did_you_mean(key, self.fields, f"declared fields: {self._names()}")
                problems.append(
                    (key, True, f"context field {key!r} is not declared by any plugin{hint}")
                )
                continue
            if value is None or value in (ANY, NONE):
                continue
            message = _value_problem(declared, value)
            if message is not None:
                problems.append((key, False, message))
        return problems

    def check_context(self, context: Mapping[str, Any]) -> None:
        """Raise ``PresetValidationError`` for a value a declared field does not allow.

        Fields nobody declared pass: a host may report facts no preset uses.
        """
        if not self:
            return
        for key, value in context.items():
            declared = self.fields.get(key)
            if declared is None or value is None:
                continue
            if declared.type == "string" and value in (ANY, NONE):
                raise PresetValidationError(
                    f"context field {key!r} cannot be {value!r}: that word is reserved for "
                    "patterns; use None for no value"
                )
            message = _value_problem(declared, value)
            if message is not None:
                raise PresetValidationError(message)

    def _names(self) -> str:
        return ", ".join(self.fields) or "none"


def _value_problem(declared: ContextField, value: Any) -> str | None:
    key = declared.name
    if declared.type == "boolean":
        if isinstance(value, bool):
            return None
        return f"context field {key!r} is true or false, not {value!r}"
    if not isinstance(value, str):
        return f"context field {key!r} takes a string, not {value!r}"
    if declared.values is None or value in declared.values:
        return None
    hint = did_you_mean(value, declared.values, f"declared values: {', '.join(declared.values)}")
    return f"context field {key!r} has no declared value {value!r}{hint}"
