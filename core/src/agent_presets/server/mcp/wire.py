"""The wire shapes of tools, results and the prompt, as plain dicts.

The server answers with dicts rather than ``mcp_types`` models: the SDK
validates them like models without building them first, which keeps
``tools/list`` and ``tools/call`` cheap. A tool's entry is built in the
library (``agent_presets.lib.toolwire``), where ``presets budget`` counts it too.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from agent_presets.lib.toolwire import plain, tool_entry
from agent_presets.results import Content, ToolResult
from agent_presets.server.start.lists import (
    PROMPT_NAME,
    PROMPT_URI,
    STATUS_URI,
    prompt_entry,
    prompt_text,
)

__all__ = [
    "PROMPT_NAME",
    "PROMPT_URI",
    "STATUS_URI",
    "error_result",
    "page_cursor",
    "plain",
    "prompt_entry",
    "prompt_text",
    "read_cursor",
    "rich_result",
    "success_result",
    "tool_entry",
]


def page_cursor(offset: int, version: int) -> str:
    """An opaque ``nextCursor``: where the next page starts, in which version of the tool list."""
    return base64.urlsafe_b64encode(f"tools:{version}:{offset}".encode()).decode().rstrip("=")


def read_cursor(cursor: str) -> tuple[int, int] | None:
    """``(offset, version)`` from a cursor ``page_cursor`` made, or ``None`` for any other text."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    kind, _, rest = raw.partition(":")
    version, _, offset = rest.partition(":")
    if kind != "tools" or not version.isdigit() or not offset.isdigit():
        return None
    return int(offset), int(version)


_json_text = json.JSONEncoder(ensure_ascii=False).encode
"""``json.dumps(value, ensure_ascii=False)``, without a new encoder for every result."""


def success_result(value: Any) -> dict[str, Any]:
    if isinstance(value, ToolResult | Content):
        return rich_result(value)
    text = value if isinstance(value, str) else _json_text(value)
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "resultType": "complete",
    }
    if isinstance(value, dict):
        result["structuredContent"] = value
    return result


def rich_result(value: ToolResult | Content) -> dict[str, Any]:
    """The wire form of a ``results`` block or ``ToolResult``."""
    if isinstance(value, Content):
        value = ToolResult([value])
    content = [plain(block.wire) for block in value.content]
    result: dict[str, Any] = {
        "content": content,
        "isError": value.is_error,
        "resultType": "complete",
    }
    if value.structured is not None:
        structured = plain(value.structured)
        result["structuredContent"] = structured
        if not content:  # clients that read text only still see it
            content.append({"type": "text", "text": json.dumps(structured, ensure_ascii=False)})
    if value.meta:
        result["_meta"] = plain(value.meta)
    return result


def error_result(message: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": message}],
        "isError": True,
        "resultType": "complete",
    }
