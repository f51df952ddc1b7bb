"""What a client sends its model for one of our tools: the text a tool budget counts.

An MCP client does not hand the model our ``tools/list`` entry. It rewraps
each tool into its model API's own tool definition, with the tool's name
(prefixed with the server's key in the client's config), description and
input schema, and drops the title, output schema, annotations and ``_meta``.
So a tool costs the model the tokens of that definition, which is about 2.5
times less than the entry (docs/budget.md). Each format here is what a
client was recorded sending (the bodies under ``tests/data/client_tools``,
and ``tests/core/test_core_toolformats.py`` holds each count to them):

- ``claude-code``: an Anthropic Messages tool, ``{"name": "mcp__KEY__TOOL",
  "description", "input_schema"}``; Claude Code flattens a top-level
  ``allOf`` into the schema and says so at the head of the description.
- ``codex``: a Responses API function tool inside one ``namespace`` tool
  per server (``{"type": "function", "name", "description", "strict":
  false, "parameters"}``); Codex rebuilds the schema from the keywords it
  knows and drops the rest (patterns, lengths, bounds, defaults).
- ``opencode``: an OpenAI chat-completions function tool, as the AI SDK
  sends it: ``{"type": "function", "function": {"name": "KEY_TOOL",
  "description", "parameters"}}``.
- ``wire``: the ``tools/list`` entry itself (``agent_presets.lib.toolwire``):
  what the server sends, not what the model reads.

Which key a user gave the server in their client's config is not known to
the server or the budget; ``SERVER_KEY`` (the key ``presets opencode``
writes) stands for it. A longer key costs a token or two a tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from agent_presets.lib.toolwire import LEGACY, entry_text, listed

CLIENTS: Final = ("claude-code", "codex", "opencode", "wire")
"""The formats ``presets budget --client`` names."""

DEFAULT_CLIENT: Final = "opencode"
"""What a count means when no client is named (docs/budget.md says why this one)."""

SERVER_KEY: Final = "presets"
"""The server's key in the client's config, which the client puts in each tool's name."""

CLIENT_NAMES: Final[Mapping[str, str]] = {
    "claude-code": "claude-code",
    "codex-mcp-client": "codex",
    "opencode": "opencode",
}
"""``clientInfo.name`` of each client whose format is known, to that format."""

CLAUDE_ALLOF_NOTE: Final = (
    "Input constraint: all listed parameters apply together "
    "(flattened from a JSON Schema allOf).\n\n"
)
"""What Claude Code puts before a description when it flattens the schema's ``allOf``."""

_TS_SDK_FIRST: Final = ("type", "properties", "required")
"""The keys the MCP TypeScript SDK's schema model declares: they come first, the rest follow."""

_CODEX_KEPT: Final = (
    "type",
    "description",
    "enum",
    "items",
    "minItems",
    "properties",
    "required",
    "additionalProperties",
    "allOf",
)
"""The schema keywords Codex 0.171.0 was seen to keep, in the order it writes them."""


class UnknownClientError(ValueError):
    """A client format that is not one of ``CLIENTS``."""


def check_client(client: str) -> str:
    if client not in CLIENTS:
        raise UnknownClientError(
            f"unknown client format {client!r}; use one of: {', '.join(CLIENTS)}"
        )
    return client


def client_format(name: str | None) -> str:
    """The format of the client whose ``clientInfo.name`` is ``name``: its own when known,
    else ``DEFAULT_CLIENT``."""
    return CLIENT_NAMES.get(name or "", DEFAULT_CLIENT)


def model_tool(
    entry: Mapping[str, Any], client: str, protocol: str = LEGACY, server: str = SERVER_KEY
) -> dict[str, Any]:
    """The tool definition ``client`` sends its model for the ``tools/list`` entry ``entry``
    (for ``wire``: the entry as sent)."""
    shaped = listed(entry, protocol)
    if check_client(client) == "wire":
        return shaped
    name, description = shaped["name"], shaped.get("description") or ""
    schema = shaped.get("inputSchema") or {"type": "object"}
    if client == "claude-code":
        schema, flattened = _flatten_all_of(_ts_sdk(schema))
        if flattened:
            description = CLAUDE_ALLOF_NOTE + description
        return {
            "name": f"mcp__{server}__{name}",
            "description": description,
            "input_schema": schema,
        }
    if client == "codex":
        return {
            "type": "function",
            "name": name,
            "description": description,
            "strict": False,
            "parameters": _codex(schema),
        }
    return {
        "type": "function",
        "function": {
            "name": f"{server}_{name}",
            "description": description,
            "parameters": _ts_sdk(schema),
        },
    }


def model_text(
    entry: Mapping[str, Any], client: str, protocol: str = LEGACY, server: str = SERVER_KEY
) -> str:
    """The JSON text of ``model_tool``: compact, UTF-8 unescaped, as the clients send it."""
    if client == "wire":
        return entry_text(entry, protocol)
    return compact(model_tool(entry, client, protocol, server))


def model_parts(
    entry: Mapping[str, Any], client: str, protocol: str = LEGACY, server: str = SERVER_KEY
) -> dict[str, str]:
    """The text of each part of the definition, keyed by the entry field it comes from
    (``name``, ``description``, ``inputSchema``; for ``wire``, every field sent)."""
    tool = model_tool(entry, client, protocol, server)
    if client == "wire":
        return {key: compact(value) for key, value in tool.items() if key != "_meta"}
    inner = tool.get("function", tool)
    schema = inner.get("input_schema", inner.get("parameters"))
    return {
        "name": compact(inner["name"]),
        "description": compact(inner["description"]),
        "inputSchema": compact(schema),
    }


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------------ schemas


def _ts_sdk(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as the MCP TypeScript SDK's client hands it on (opencode, Claude Code):
    its declared keys first, and numbers as JavaScript writes them."""
    first = {k: schema[k] for k in _TS_SDK_FIRST if k in schema}
    ordered = {**first, **{k: v for k, v in schema.items() if k not in first}}
    return {k: _js(v) for k, v in ordered.items()}


def _js(value: Any) -> Any:
    """``120.0`` as JavaScript's JSON writes it: ``120``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _js(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js(v) for v in value]
    return value


def _flatten_all_of(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Claude Code's flattening of a top-level ``allOf``: its parts' properties and required
    names join the schema's own, and the ``allOf`` goes."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema, False
    flat = {k: v for k, v in schema.items() if k != "allOf"}
    properties = dict(flat.get("properties") or {})
    required = list(flat.get("required") or [])
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        for key, value in (part.get("properties") or {}).items():
            properties.setdefault(key, value)
        required += [r for r in part.get("required") or [] if r not in required]
    if properties:
        flat["properties"] = properties
    if required:
        flat["required"] = required
    return flat, True


def _codex(schema: Any) -> Any:
    """The schema as Codex 0.171.0 rebuilds it: only the keywords it knows (``_CODEX_KEPT``),
    in its order, properties sorted by name (an object always has them), and a type
    inferred where none is given."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key in _CODEX_KEPT:
        if key == "type":
            kind = schema.get("type", _codex_type(schema))
            if kind is not None:
                out["type"] = kind
            continue
        if key == "properties" and out.get("type") == "object":
            value = schema.get("properties")
            properties = value if isinstance(value, Mapping) else {}
            out[key] = {name: _codex(properties[name]) for name in sorted(properties)}
            continue
        if key not in schema:
            continue
        value = schema[key]
        if key == "items" or (key == "additionalProperties" and isinstance(value, Mapping)):
            value = _codex(value)
        elif key == "properties" and isinstance(value, Mapping):
            value = {name: _codex(value[name]) for name in sorted(value)}
        elif key == "allOf" and isinstance(value, list):
            value = [_codex(part) for part in value]
        out[key] = value
    return out


def _codex_type(schema: Mapping[str, Any]) -> str | None:
    """The type Codex gives a schema that names none (an ``enum`` of strings: ``string``)."""
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    values = schema.get("enum")
    if isinstance(values, list) and values:
        first = values[0]
        if isinstance(first, bool):
            return "boolean"
        if isinstance(first, int | float):
            return "number"
        return "string"
    return None
