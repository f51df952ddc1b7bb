"""A tool's ``tools/list`` entry, built without the MCP SDK.

The server answers ``tools/list`` with the entries ``tool_entry`` builds;
``presets budget`` counts the same entries, so it lives in the library, where
neither needs ``mcp`` (slow to import, and the library must not).

The SDK does not send an entry as given: it validates the result against the
protocol version's models and sends their dump, so fields come in the
models' order, a key the version does not know is dropped, and so is a
``None``. ``listed`` reproduces that shaping for the versions the server
speaks, and ``entry_text`` the compact JSON the transports write; an e2e test
(``tests/e2e/test_e2e_budget.py``) holds both equal, byte for byte, to what
``presets serve`` sends, so an SDK that changes its models fails it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from agent_presets.lib.model import DANGEROUS_RISKS, ToolDef

# ---------------------------------------------------------------- hints

RISK_HINTS: Final[Mapping[str, Mapping[str, bool]]] = {
    "normal": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-read": {"destructiveHint": False, "openWorldHint": False},
    "filesystem-write": {"destructiveHint": True, "openWorldHint": False},
    "destructive": {"destructiveHint": True, "openWorldHint": False},
    "shell": {"destructiveHint": True, "openWorldHint": True},
}

READ_ONLY_HINTS: Final[Mapping[str, bool]] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "openWorldHint": False,
}


_SAFER: Final[Mapping[str, bool]] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
"""Each hint's value that claims less risk than the other one."""


def floored_hints(risk: str, hints: Mapping[str, Any] | None) -> dict[str, Any]:
    """``hints`` from a source we do not trust, less every claim of less risk than ``risk``.

    An upstream server is code someone else runs: its hints may make a tool
    look riskier than its preset says, never less. So under a dangerous
    risk, ``readOnlyHint: true`` and ``idempotentHint: true`` are dropped (the
    preset says the tool may write), and so is a ``false`` where the risk's
    own hint is ``true`` (``destructiveHint``; ``openWorldHint`` for
    ``shell``). A preset of a risk that writes nothing (``normal``,
    ``filesystem-read``) keeps the upstream's ``readOnlyHint: true``: it
    lowers no gate. A hint that is not a boolean says nothing, and is dropped.
    """
    floor = RISK_HINTS[risk]
    dangerous = risk in DANGEROUS_RISKS
    kept: dict[str, Any] = {}
    for key, value in (hints or {}).items():
        safer = _SAFER.get(key)
        if safer is not None:
            if not isinstance(value, bool):
                continue
            if value is safer and (dangerous or floor.get(key) is (not safer)):
                continue
        kept[key] = value
    return kept


def annotations_for(tool: ToolDef) -> dict[str, Any]:
    """MCP tool annotations from a tool's effective risk, refined by the adapter's own.

    MCP's defaults assume the worst (an unannotated tool is destructive and
    open-world), so every preset tool states its hints: dangerous risks are
    destructive, ``shell`` also reaches the open world, everything else is
    neither. A read-only tool (``ToolDef.risk`` None) is read-only and
    non-destructive whatever its preset's risk. A host's own tool (no preset)
    keeps only the hints it gives itself.
    """
    if tool.preset is None:
        hints: dict[str, Any] = {}
    elif tool.risk is None:
        hints = dict(READ_ONLY_HINTS)
    else:
        hints = dict(RISK_HINTS[tool.risk])
    hints.update(tool.annotations)
    return hints


# ---------------------------------------------------------------- entries


def tool_entry(tool: ToolDef, annotations: dict[str, Any]) -> dict[str, Any]:
    """The ``tools/list`` entry of ``tool``, as the server hands it to the SDK."""
    entry: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": plain(tool.input_schema),
    }
    title = tool.title or annotations.get("title")
    if title:
        entry["title"] = title
    if annotations:
        entry["annotations"] = annotations
    if tool.output_schema is not None:
        entry["outputSchema"] = plain(tool.output_schema)
    return entry


def plain(value: Any) -> Any:
    """Frozen mappings (MappingProxyType) to dicts, for the wire."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


# ------------------------------------------------ the shape the SDK sends

LEGACY: Final = "2025-11-25"
MODERN: Final = "2026-07-28"
PROTOCOLS: Final = (LEGACY, MODERN)
"""The protocol versions whose ``tools/list`` shape ``listed`` knows; older ones send LEGACY's."""

_TOOL_FIELDS: Final = {
    LEGACY: (
        "_meta",
        "annotations",
        "description",
        "execution",
        "icons",
        "inputSchema",
        "name",
        "outputSchema",
        "title",
    ),
    MODERN: (
        "_meta",
        "annotations",
        "description",
        "icons",
        "inputSchema",
        "name",
        "outputSchema",
        "title",
    ),
}
"""A tool's fields in the order of the SDK's ``Tool`` model (``mcp_types``); others are dropped."""

_SCHEMA_FIELDS: Final = {
    (LEGACY, "inputSchema"): ("$schema", "properties", "required", "type"),
    (LEGACY, "outputSchema"): ("$schema", "properties", "required", "type"),
    (MODERN, "inputSchema"): ("$schema", "type"),
    (MODERN, "outputSchema"): ("$schema",),
}
"""The declared fields of the schema models; any other key follows them, in the tool's order."""

_ANNOTATION_FIELDS: Final = (
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
    "readOnlyHint",
    "title",
)
"""``ToolAnnotations``' fields in model order; an annotation not among them is dropped."""


def listed(entry: Mapping[str, Any], protocol: str = LEGACY) -> dict[str, Any]:
    """``entry`` as the SDK sends it to a client of ``protocol``: fields in model order.

    A ``None`` is dropped where the SDK's models hold it (a field or an
    annotation, or a schema's top-level key), kept deeper inside a schema.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} is not one of: {', '.join(PROTOCOLS)}")
    shaped: dict[str, Any] = {}
    for key in _TOOL_FIELDS[protocol]:
        value = entry.get(key)
        if value is None:
            continue
        if key == "annotations" and isinstance(value, Mapping):
            value = {k: value[k] for k in _ANNOTATION_FIELDS if value.get(k) is not None}
        elif key in ("inputSchema", "outputSchema") and isinstance(value, Mapping):
            value = _schema(value, _SCHEMA_FIELDS[protocol, key])
        shaped[key] = value
    return shaped


def _schema(schema: Mapping[str, Any], declared: tuple[str, ...]) -> dict[str, Any]:
    first = {k: schema[k] for k in declared if schema.get(k) is not None}
    rest = {k: v for k, v in schema.items() if k not in first and v is not None}
    return {**first, **rest}


def entry_text(entry: Mapping[str, Any], protocol: str = LEGACY) -> str:
    """The JSON text of ``entry`` in a ``tools/list`` answer: compact, UTF-8 unescaped."""
    return json.dumps(listed(entry, protocol), ensure_ascii=False, separators=(",", ":"))
