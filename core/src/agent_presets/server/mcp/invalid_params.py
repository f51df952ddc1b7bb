"""A ``-32602 Invalid params`` that names the field, from the SDK's own validation.

The SDK checks a request's params against the MCP schema of the connection's
protocol version, then answers every failure with the same words:
``"Invalid request parameters"``, ``data: ""``. The client cannot tell
``arguments`` sent as an array from a missing ``name``. ``name_invalid_params``
is a server middleware around that check: it keeps the code and rewords the
error with each offending field as a JSON path from the message
(``params.arguments``) and what was wrong with it. The rule stays the SDK's
schema; only the words are ours. Values are never quoted (pydantic's input
is left out), since they come from the client. A request sent before the
handshake gets the same bare words from the SDK's gate; it is told to
initialize first. The SDK's ``-32601 Method not found`` carries the method
name in ``data``; a name longer than any method is cut short there.
"""

from __future__ import annotations

import re
from typing import Any, Final

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from agent_presets.lib.schema import quote

__all__ = ["invalid_params_error", "name_invalid_params"]

# pydantic names the member of a union it tried ("str", "int",
# "TextContent", "list[...]") in the error location. MCP fields are
# lowerCamel (or "_meta"), so a part that is a builtin type name, carries
# brackets or starts upper-case is such a tag, not a field.
_UNION_TAG: Final = re.compile(r"^(str|int|float|bool|none|list|dict|bytes)$|[\[\]]|^[A-Z]")
_MAX_FIELDS: Final = 5
_GATE: Final = ("Invalid request parameters", "")
_PART_LIMIT: Final = 100
"""Characters of one field name kept in a path: a key may be the client's."""


async def name_invalid_params(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware (``Server.middleware``): reword the SDK's params failures.

    The SDK documents this as the place a malformed request's
    ``ValidationError`` passes through. Notifications are left alone: the SDK
    drops a malformed one, and JSON-RPC never answers a notification.
    """
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        if ctx.request_id is None:
            raise
        raise invalid_params_error(ctx.method, exc) from None
    except MCPError as exc:
        if exc.error.code == types.METHOD_NOT_FOUND and isinstance(exc.data, str):
            if len(exc.data) <= _PART_LIMIT:
                raise
            raise MCPError(
                code=types.METHOD_NOT_FOUND, message=exc.message, data=quote(exc.data)
            ) from None
        # Inside the chain the SDK raises its bare wording only from the
        # before-initialize gate (params failures arrive here as
        # ValidationError); what is missing is the handshake.
        if exc.error.code != types.INVALID_PARAMS or (exc.message, exc.data) != _GATE:
            raise
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=(
                f"Invalid request parameters: {ctx.method} before initialize; "
                "send initialize, then notifications/initialized, first"
            ),
            data={"method": ctx.method, "fields": []},
        ) from None


def invalid_params_error(method: str, exc: ValidationError) -> MCPError:
    """``-32602`` for ``method`` whose params failed ``exc``, naming each field.

    ``data`` is ``{"method": ..., "fields": [{"field": "params.x", "problem": ...}]}``.
    """
    problems: dict[str, list[str]] = {}
    # The SDK validates whole requests (locations start at "params") and, for
    # a handler, the params alone (locations start at the field).
    inside_params = not exc.title.endswith("Request")
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        parts = [
            str(part) if len(str(part)) <= _PART_LIMIT else quote(str(part))
            for part in error["loc"]
            if not _UNION_TAG.search(str(part))
        ]
        if inside_params:
            parts.insert(0, "params")
        field = ".".join(parts) or "params"
        messages = problems.setdefault(field, [])
        if error["msg"] not in messages:
            messages.append(error["msg"])
    fields = [
        {"field": field, "problem": " or ".join(messages)} for field, messages in problems.items()
    ]
    shown = "; ".join(f"{f['field']}: {f['problem']}" for f in fields[:_MAX_FIELDS])
    if len(fields) > _MAX_FIELDS:
        shown += f"; and {len(fields) - _MAX_FIELDS} more"
    return MCPError(
        code=types.INVALID_PARAMS,
        message=f"Invalid params for {method}: {shown}",
        data={"method": method, "fields": fields},
    )
