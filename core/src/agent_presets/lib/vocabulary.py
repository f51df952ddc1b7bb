"""The context vocabulary: which context fields exist and which values they take.

The core names no context field itself. Plugins and the host declare fields
through the ``presets_context_fields`` hook; the declarations merge into one
``Vocabulary``, against which preset patterns are checked when the catalog is
loaded and contexts when the host changes one.

A field is declared once, by whoever provides it (the host): the declaration
gives its type, its description and whether a context must carry it
(``required``). A plugin that only uses a field adds values to it: a mapping
with ``name`` and ``values`` and no ``type``. Additions merge into the
declaration, whatever order the plugins load in; an addition to a field
nobody declares makes it a string field of the added values, so a plugin
still validates in a host that declares nothing. Two declarations of one
field with one type merge (plugins written before additions declare); two
types for one field, or values added to a boolean, are an error naming both
sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_presets.lib.model import ANY, FIELD_RE, NONE, PresetValidationError
from agent_presets.lib.suggest import did_you_mean

FieldType = Literal["string", "boolean"]
FIELD_TYPES: Final = ("string", "boolean")
DECLARATION_KEYS: Final = frozenset({"name", "type", "values", "description", "required"})
ADDITION_KEYS: Final = frozenset({"name", "values"})


@dataclass(frozen=True)
class ContextField:
    """One declared context field. ``values`` None means any string (or, for a boolean, both).

    ``required`` (a keyword) says a context must carry the field: the manager
    refuses a context without it (or with None for it).
    """

    name: str
    type: FieldType = "string"
    values: tuple[str, ...] | None = None
    description: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)
    required: bool = field(default=False, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """The declaration as a mapping, as ``presets_context_fields`` may return it."""
        return {
            "name": self.name,
            "type": self.type,
            "values": None if self.values is None else list(self.values),
            "description": self.description,
            "required": self.required,
        }


class ContextValueError(PresetValidationError):
    """A context value (or key) the vocabulary does not allow; says which field and what it allows.

    ``field`` is the field's name; ``values`` the values it allows (None: any
    string, or a field that is not declared at all).
    """

    def __init__(self, message: str, field: str, values: tuple[str, ...] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.values = values


ContextFieldDeclaration = ContextField | Mapping[str, Any]
"""What ``presets_context_fields`` returns items of: a ``ContextField`` or a mapping of its keys."""


def is_addition(declaration: object) -> bool:
    """Whether a hook result item adds values to a field rather than declaring it (no type)."""
    return isinstance(declaration, Mapping) and "type" not in declaration


def parse_declaration(declaration: object, source: str) -> ContextField:
    """A checked ``ContextField`` from one hook result item, or an error naming ``source``.

    An addition (``is_addition``) comes back as a string field of its values.
    """
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
    addition = is_addition(data)
    if addition:
        unknown = set(data) - ADDITION_KEYS
        if unknown or "values" not in data:
            raise PresetValidationError(
                f"{where}: with no type this adds values to a field, and takes only name and "
                f"values (found {sorted(data)}); give a type to declare the field",
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
    elif addition:
        raise PresetValidationError(
            f"{where}: values must be a list of strings; an addition cannot open a field "
            "to any string (only its declaration can)",
            source=source,
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise PresetValidationError(f"{where}: description must be a string", source=source)
    required = data.get("required", False)
    if not isinstance(required, bool):
        raise PresetValidationError(f"{where}: required must be true or false", source=source)
    return ContextField(name, kind, values, description, (source,), required=required)


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

    def values_of(self, name: str) -> tuple[str, ...] | None:
        """The values field ``name`` allows (None: any string, or undeclared)."""
        declared = self.fields.get(name)
        return None if declared is None else declared.values

    @classmethod
    def merge(
        cls, declarations: Iterable[tuple[str, object]]
    ) -> tuple[Vocabulary, list[PresetValidationError]]:
        """Merge ``(source, declaration)`` pairs; a bad or conflicting one is a problem, skipped.

        Declarations first, then additions, so which plugin loads first
        changes neither a field's type nor its description.
        """
        merged: dict[str, ContextField] = {}
        problems: list[PresetValidationError] = []
        additions: list[ContextField] = []
        for source, declaration in declarations:
            try:
                new = parse_declaration(declaration, source)
            except PresetValidationError as exc:
                problems.append(exc)
                continue
            if is_addition(declaration):
                additions.append(new)
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
            merged[new.name] = _joined(old, new, old.description or new.description)
        for new in additions:
            old = merged.get(new.name)
            if old is None:
                merged[new.name] = new
            elif old.type == "boolean":
                source = new.sources[0]
                problems.append(
                    PresetValidationError(
                        f"plugin {source!r} adds values to context field {new.name!r}, which "
                        f"{', '.join(old.sources)} declares as boolean; a boolean field takes "
                        "true and false: leave the addition out",
                        source=source,
                    )
                )
            else:
                merged[new.name] = _joined(old, new, old.description)
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
                declare = {"name": key, "type": "boolean" if isinstance(value, bool) else "string"}
                problems.append(
                    (
                        key,
                        True,
                        f"context field {key!r} is not declared by any plugin{hint}; a plugin "
                        f"that provides it declares it in its presets_context_fields hook: "
                        f"{declare!r}",
                    )
                )
                continue
            if value is None or value in (ANY, NONE):
                continue
            message = _value_problem(declared, value)
            if message is not None:
                if isinstance(value, str) and declared.type != "boolean":
                    # A plugin adds the values its presets use to a field someone declared.
                    message += (
                        "; if your plugin brings this value, declare it in its "
                        f"presets_context_fields hook: {{'name': {key!r}, 'values': [{value!r}]}}"
                    )
                problems.append((key, False, message))
        return problems

    def check_context(self, context: Mapping[str, Any]) -> None:
        """Raise ``PresetValidationError`` for a value a declared field does not allow,
        or for a required field the context lacks (or has None for).

        Fields nobody declared pass: a host may report facts no preset uses.
        """
        if not self:
            return
        for key, value in context.items():
            declared = self.fields.get(key)
            if declared is None or value is None:
                continue
            self.check_value(key, value)
        missing = [f for f in self.fields.values() if f.required and context.get(f.name) is None]
        if missing:
            first = missing[0]
            allowed = "true or false" if first.type == "boolean" else _allowed(first)
            also = (
                f"; also missing: {', '.join(f.name for f in missing[1:])}" if missing[1:] else ""
            )
            raise ContextValueError(
                f"the context has no {first.name!r}, which {', '.join(first.sources)} declares "
                f"required; give it a value ({allowed}){also}",
                first.name,
                first.values,
            )

    def check_change(self, changes: Mapping[str, Any]) -> None:
        """Raise ``PresetValidationError`` for a key no one declared or a value it does not allow.

        For a person changing the context by name (``presets context set``): a
        typo in a key is an error there, not a new fact.
        """
        for key, value in changes.items():
            if self and key not in self.fields:
                hint = did_you_mean(key, self.fields, f"declared fields: {self._names()}")
                raise ContextValueError(f"context field {key!r} is not declared{hint}", key)
            declared = self.fields.get(key)
            if declared is None:
                continue
            if value is None and declared.required:
                allowed = "true or false" if declared.type == "boolean" else _allowed(declared)
                raise ContextValueError(
                    f"context field {key!r} is required by {', '.join(declared.sources)} and "
                    f"cannot be cleared; give it a value ({allowed})",
                    key,
                    declared.values,
                )
            if value is not None:
                self.check_value(key, value)

    def check_value(self, key: str, value: Any) -> None:
        """Raise ``PresetValidationError`` unless the declared field ``key`` allows ``value``.

        The message names the field, the allowed values and the closest one.
        """
        declared = self.fields[key]
        if declared.type == "string" and value in (ANY, NONE):
            raise ContextValueError(
                f"context field {key!r} cannot be {value!r}: that word is reserved for "
                "patterns; use None for no value",
                key,
                declared.values,
            )
        message = _value_problem(declared, value)
        if message is not None:
            raise ContextValueError(message, key, declared.values)

    def _names(self) -> str:
        return ", ".join(self.fields) or "none"


def _joined(old: ContextField, new: ContextField, description: str) -> ContextField:
    """One field from two sources: their values together (any string, if either allows any)."""
    values: tuple[str, ...] | None = None
    if old.values is not None and new.values is not None:
        values = old.values + tuple(v for v in new.values if v not in old.values)
    return ContextField(
        old.name,
        old.type,
        values,
        description,
        (*old.sources, *new.sources),
        required=old.required or new.required,
    )


def _allowed(declared: ContextField) -> str:
    if declared.values is None:
        return "any string"
    return f"declared values: {', '.join(declared.values) or 'none'}"


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
    allowed = _allowed(declared)
    hint = did_you_mean(value, declared.values, allowed)
    if hint.startswith("; did you mean"):
        hint = f"{hint} ({allowed})"
    return f"context field {key!r} has no declared value {value!r}{hint}"
