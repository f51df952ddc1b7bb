"""Placeholders in system prompts: ``{{drawing.insert-shape}}`` names a tool,
``{{values:activity}}`` the values a context field takes.

A prompt names tools by id so that the host's namespace decides the MCP name
(``space_drawing_insert_shape`` under the headless host, ``myapp_...`` in
another): the core fills the placeholders when it builds prompt fragments,
and the catalog reports a placeholder whose tool id no adapter provides. A
prompt names a field's values the same way, so it lists what the installed
plugins declare (``'drawing', 'graph'``) rather than what its author knew of;
the catalog reports a placeholder of a field nobody declares.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

PLACEHOLDER_RE: Final = re.compile(r"\{\{\s*([a-z0-9][a-z0-9_.-]*)\s*\}\}")
VALUES_RE: Final = re.compile(r"\{\{\s*values:([a-z][a-z0-9_]*)\s*\}\}")


def placeholders(text: str) -> list[str]:
    """The tool ids ``text`` names, in order of first appearance."""
    return list(dict.fromkeys(PLACEHOLDER_RE.findall(text)))


def fill_placeholders(text: str, name_of: Callable[[str], str | None]) -> str:
    """``text`` with each ``{{tool.id}}`` replaced by ``name_of(tool_id)``.

    A placeholder ``name_of`` does not know (None) is left as written: the
    catalog has already reported it, and a visible ``{{...}}`` is easier to
    trace than a silently dropped name.
    """
    if "{{" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name = name_of(match.group(1))
        return match.group(0) if name is None else name

    return PLACEHOLDER_RE.sub(replace, text)


def value_placeholders(text: str) -> list[str]:
    """The context fields whose values ``text`` names (``{{values:FIELD}}``), in order."""
    return list(dict.fromkeys(VALUES_RE.findall(text)))


def fill_values(text: str, values_of: Callable[[str], str | None]) -> str:
    """``text`` with each ``{{values:FIELD}}`` replaced by ``values_of(FIELD)``.

    A field ``values_of`` does not know (None) is left as written, as a tool is.
    """
    if "{{" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        values = values_of(match.group(1))
        return match.group(0) if values is None else values

    return VALUES_RE.sub(replace, text)
