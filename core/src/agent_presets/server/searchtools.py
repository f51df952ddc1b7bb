"""The server's discovery tools (``presets_search``, ``presets_call``, ``presets_call_risky``).

``server.mcp.discovery`` serves them (who gets them, and what they do); they
are defined here, without the SDK, so that the start front (``server.start``)
lists them as the full server does.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from agent_presets.lib.model import ToolDef
from agent_presets.lib.toolwire import tool_entry

__all__ = [
    "ALWAYS_LOAD",
    "CALL_TOOL",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_QUERY",
    "RISKY_CALL_TOOL",
    "SEARCH_TOOL",
    "discovery_tools",
    "own_entry",
]

SEARCH_TOOL: Final = "presets_search"
CALL_TOOL: Final = "presets_call"
RISKY_CALL_TOOL: Final = "presets_call_risky"
ALWAYS_LOAD: Final = "anthropic/alwaysLoad"
"""The tool ``_meta`` key Claude Code reads: load this tool now, not behind its ToolSearch."""

DEFAULT_LIMIT: Final = 5
MAX_LIMIT: Final = 20
MAX_QUERY: Final = 500

_SEARCH_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_QUERY,
            "description": "What you want to do, in words, e.g. 'add a box to the 3D scene'.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"How many tools to return (default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

_CALL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The tool's name, as presets_search gave it.",
        },
        "arguments": {
            "type": "object",
            "description": "The tool's arguments, as its inputSchema says.",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

_OPEN_HINTS: Final = MappingProxyType(
    {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}
)


def _checker(name: str, schema: Mapping[str, Any]) -> Any:
    """The tool's argument check, with jsonschema built on the first call."""
    from agent_presets.lib.adapters import check_arguments

    validators: list[Any] = []

    def check(arguments: Mapping[str, Any]) -> None:
        if not validators:
            import jsonschema

            validators.append(jsonschema.Draft202012Validator(schema))
        check_arguments(name, validators[0], dict(arguments))

    return check


def _unrun(arguments: Mapping[str, Any] | None = None, **_: Any) -> Any:
    raise RuntimeError("the discovery tools run in their own stage, not through ToolDef.run")


def discovery_tools(prefix: str) -> tuple[ToolDef, ToolDef, ToolDef]:
    """``(presets_search, presets_call, presets_call_risky)`` under the namespace ``prefix``."""
    search_name = f"{prefix}{SEARCH_TOOL}"
    call_name = f"{prefix}{CALL_TOOL}"
    risky_name = f"{prefix}{RISKY_CALL_TOOL}"
    search = _own_tool(
        search_name,
        "Find a tool for a task",
        (
            "Find tools for a task, among all of this server's tools, also those not in "
            "your tool list (it is kept short, and goes stale when the app's context "
            "changes). Each result has its inputSchema, whether it is active now, and if "
            f"not, what would turn it on. Run one with {call_name}."
        ),
        _SEARCH_SCHEMA,
        MappingProxyType({"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}),
    )
    call = _own_tool(
        call_name,
        "Run a tool found by search",
        (
            f"Run a tool that {search_name} found, or that a result said is active "
            "now: name, and its arguments as its inputSchema says. It runs exactly as a "
            "direct call would, with the same rules; a tool not active now answers with "
            f"what would turn it on. Risky tools (file writes, deletes, shell) go through "
            f"{risky_name}."
        ),
        _CALL_SCHEMA,
        _OPEN_HINTS,
    )
    # A client's permission rules match tool names: risky tools reached indirectly
    # have a name of their own to ask for, as each listed risky tool has.
    risky = _own_tool(
        risky_name,
        "Run a risky tool (file writes, deletes, shell)",
        (
            f"As {call_name}, for a tool whose preset writes files, deletes or runs "
            "a shell (search results and notices mark them risky). Your client may ask "
            "the user first, and the server may too."
        ),
        _CALL_SCHEMA,
        _OPEN_HINTS,
    )
    return search, call, risky


def _own_tool(
    name: str,
    title: str,
    description: str,
    schema: dict[str, Any],
    annotations: Mapping[str, Any],
) -> ToolDef:
    """One of the discovery tools: run in a stage of its own, its arguments checked
    against ``schema`` under its own name."""
    return ToolDef(
        name=name,
        title=title,
        description=description,
        input_schema=MappingProxyType(schema),
        run=_unrun,
        annotations=annotations,
        check=_checker(name, schema),
    )


def own_entry(tool: ToolDef) -> dict[str, Any]:
    """A discovery tool's ``tools/list`` entry: loaded at once by clients that defer tools."""
    entry = tool_entry(tool, dict(tool.annotations))
    entry["_meta"] = {ALWAYS_LOAD: True}
    return entry
