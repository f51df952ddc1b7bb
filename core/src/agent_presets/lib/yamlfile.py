"""PyYAML's side of reading a preset file: the loader, the walk that records positions.

Kept apart from ``loader`` so that what needs no YAML (reading a file, a
read answered from the cache of an unchanged file, see ``parsecache``)
does not import PyYAML: its import costs about 14 ms of a server's start-up.
``loader`` imports this module the first time it parses a text, and
re-exports ``PresetYamlLoader`` and the limits.
"""

from __future__ import annotations

import re
from typing import Any, Final

import yaml

from agent_presets.lib.model import PresetValidationError
from agent_presets.lib.parsecache import Composed, Position
from agent_presets.lib.schema import PathKey, clip, quote

__all__ = ["MAX_DEPTH", "MAX_SHAPE_PROBLEMS", "MAX_VALUES", "PresetYamlLoader", "compose"]

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_YAML: Final = "tag:yaml.org,2002:"
STR, INT, FLOAT, BOOL, NULL = (_YAML + t for t in ("str", "int", "float", "bool", "null"))
SEQ, MAP, MERGE = _YAML + "seq", _YAML + "map", _YAML + "merge"
_PLAIN_TAGS: Final = frozenset({STR, INT, FLOAT, BOOL, NULL, SEQ, MAP})
"""The tags of JSON's values: the only ones a preset file may hold."""


class PresetYamlLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """A safe loader whose only booleans are true and false, and whose dates are strings."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception:
            # An explicit !!int abc or !!float x reaches int()/float() and raises
            # ValueError; say where instead of letting it escape.
            value = node.value if isinstance(node, yaml.ScalarNode) else ""
            raise _Refused(
                f"YAML syntax error: {quote(value)} cannot be read as {_tag_label(node.tag)}; "
                "quote it if you mean the text",
                node.start_mark,
            ) from None


# Implicit resolvers: JSON's values only. No YAML 1.1 yes/no/on/off booleans, no
# timestamps (a date is a string, as in JSON), no '=' value key.
PresetYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag in (INT, FLOAT, NULL, MERGE)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
PresetYamlLoader.add_implicit_resolver(
    BOOL,
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _tag_label(tag: str | None) -> str:
    short = "!!" + tag[len(_YAML) :] if tag and tag.startswith(_YAML) else (tag or "?")
    kind = {INT: "an integer", FLOAT: "a number", BOOL: "a boolean", NULL: "null"}.get(tag or "")
    return f"{kind} ({short})" if kind else clip(short, 60)


def _char_at(text: str, line: int, col: int) -> str:
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    return text[start + col - 1 : start + col]


# ---------------------------------------------------------------- positions


MAX_VALUES = 200_000
"""How many values a file may expand to through aliases before it is refused."""
MAX_DEPTH = 100
MAX_SHAPE_PROBLEMS = 50
"""Keys and tags reported per file; past this, one line counts the rest."""

_KEY_KINDS: Final = {INT: "a number", FLOAT: "a number", BOOL: "a boolean", NULL: "null"}


class _Positions:
    """Where each value and key of a YAML document starts, walked once per node.

    Walking the node graph (not the constructed data) before construction sees
    merge keys as written, visits an aliased node once however often it is
    referenced, and catches alias cycles and alias bombs before jsonschema
    would walk their expansion. It also finds what JSON cannot hold (a tag, a
    complex or non-string key) so the file is refused before construction,
    which would raise on an unhashable key or build a date or bytes.
    """

    def __init__(self) -> None:
        self.values: dict[PathKey, Position] = {}
        self.keys: dict[PathKey, Position] = {}
        self.duplicates: list[tuple[PathKey, int, int]] = []
        self.problems: list[tuple[str, int, int]] = []
        self._more = 0
        self._sizes: dict[int, int] = {}
        self._active: set[int] = set()

    def walk(self, node: yaml.Node, path: PathKey = ()) -> int:
        """Record positions below ``node``; return how many values it expands to."""
        self._walk(node, path)
        if self._more:
            self.problems.append(
                (f"and {self._more:,} more problem(s) like these", *self.problems[-1][1:])
            )
        return self._sizes.get(id(node), 1)

    def _walk(self, node: yaml.Node, path: PathKey) -> int:
        mark = node.start_mark
        self.values.setdefault(path, (mark.line + 1, mark.column + 1))
        key = id(node)
        if key in self._sizes:
            return self._sizes[key]
        if key in self._active:
            raise _Refused(
                "an alias refers to a value that contains it; write the values out instead", mark
            )
        if len(self._active) >= MAX_DEPTH:
            raise _Refused(f"values are nested more than {MAX_DEPTH} levels deep", mark)
        if len(self._sizes) + len(self._active) >= MAX_VALUES:
            raise _Refused(
                f"the document holds more than {MAX_VALUES:,} values; split it into several files",
                mark,
            )
        if node.tag not in _PLAIN_TAGS:
            self._tag_problem(node)
        self._active.add(key)
        size = 1
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                kmark = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key_node.tag == MERGE and isinstance(key_node, yaml.ScalarNode):
                    size += self._walk(value_node, (*path, key_node.value))
                    continue
                k = self._key(key_node)
                if k is None:  # already reported: the file will not be constructed
                    continue
                child = (*path, k)
                if k in seen:
                    self.duplicates.append((child, *kmark))
                seen.add(k)
                self.keys.setdefault(child, kmark)
                size += self._walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                size += self._walk(item, (*path, i))
        self._active.discard(key)
        if size > MAX_VALUES:  # fewer distinct values than that (see above): aliases expand them
            raise _Refused(
                f"the document expands to more than {MAX_VALUES:,} values through aliases; "
                "write the values out instead",
                mark,
            )
        self._sizes[key] = size
        return size

    def _key(self, node: yaml.Node) -> str | None:
        """The string a mapping key is, or None after reporting why it cannot be one."""
        if not isinstance(node, yaml.ScalarNode):
            kind = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
            self._problem(
                f"a mapping key must be a field name, not {kind}; "
                "complex keys ('? ') are not allowed in a preset file",
                node,
            )
            return None
        if node.tag not in _PLAIN_TAGS:
            self._tag_problem(node)
            return None
        if node.tag != STR:
            what = "an empty key" if node.value in ("", "~") else f"the key {clip(node.value, 60)}"
            self._problem(
                f"{what} is read as {_KEY_KINDS.get(node.tag, 'a value')}, not a field name; "
                "a field name is text: rename it, or quote it",
                node,
            )
            return None
        value: str = node.value
        return value

    def _tag_problem(self, node: yaml.Node) -> None:
        self._problem(
            f"YAML syntax error: the tag {_tag_label(node.tag)} is not allowed in a preset file; "
            "write plain strings, numbers, booleans, lists and mappings",
            node,
        )

    def _problem(self, message: str, node: yaml.Node) -> None:
        if len(self.problems) >= MAX_SHAPE_PROBLEMS:
            self._more += 1
            return
        self.problems.append((message, node.start_mark.line + 1, node.start_mark.column + 1))


_OPENERS: Final = {
    "while parsing a flow sequence": "a flow sequence ([...])",
    "while parsing a flow mapping": "a flow mapping ({...})",
    "while scanning a quoted scalar": "a quoted string",
    "while scanning a simple key": "a key",
}
"""The parser's contexts that are an opened construct left unfinished, and how to name them.

Others (a block mapping, a plain scalar) are broken where the parser gave up,
so their problem is reported there.
"""


def _syntax_error(exc: yaml.MarkedYAMLError, text: str, source: str) -> PresetValidationError:
    """A YAML syntax error, at the construct it breaks and naming where the parser gave up.

    The parser notices an unclosed ``[`` or quote only lines later, where it
    gives up (the problem mark); the fix belongs where the construct opens
    (the context mark), so that is the position reported.
    """
    problem, opened = exc.problem_mark, exc.context_mark
    mark = problem or opened
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    what = clip(exc.problem or "invalid YAML")
    if "tab" not in what and _char_at(text, line, col) == "\t":
        what += " (a tab: YAML indents with spaces)"
    construct = _OPENERS.get(exc.context or "")
    if construct and problem and opened and opened.index < problem.index and "tab" not in what:
        return PresetValidationError(
            f"YAML syntax error in {construct} that starts here: {what}; the parser gave up "
            f"at line {line}, column {col}",
            source=source,
            line=opened.line + 1,
            column=opened.column + 1,
        )
    return PresetValidationError(f"YAML syntax error: {what}", source=source, line=line, column=col)


class _Refused(yaml.YAMLError):
    def __init__(self, message: str, mark: yaml.Mark) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def compose(text: str, source: str) -> Composed | list[PresetValidationError]:
    """Read ``text`` as a preset file's YAML, or say why it cannot be read (located)."""
    marks = _Positions()
    try:
        loader = PresetYamlLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                marks.walk(node)
            if marks.problems:
                return [
                    PresetValidationError(m, source=source, line=line, column=col)
                    for m, line, col in marks.problems
                ]
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        return [_syntax_error(exc, text, source)]
    except _Refused as exc:
        return [
            PresetValidationError(
                exc.message,
                source=source,
                line=exc.mark.line + 1,
                column=exc.mark.column + 1,
            )
        ]
    except yaml.YAMLError as exc:
        return [
            PresetValidationError(f"YAML error: {clip(str(exc))}", source=source, line=1, column=1)
        ]
    except RecursionError:
        # Only the pure-Python parser recurses per level; libyaml stops at its own depth.
        return [
            PresetValidationError(
                f"values are nested more than {MAX_DEPTH} levels deep",
                source=source,
                line=1,
                column=1,
            )
        ]
    return Composed(data, marks.values, marks.keys, marks.duplicates)
