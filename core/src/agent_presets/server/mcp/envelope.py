"""Judge one incoming JSON-RPC text before the SDK sees it, and word the answer.

The SDK drops a message it cannot validate (stdio) or answers it with
``-32602`` and a pydantic dump that echoes the input (HTTP). JSON-RPC 2.0 asks
for more: unparseable text is ``-32700 Parse error`` with ``id: null``; an
envelope that is not a valid request is ``-32600 Invalid Request``, with the
request's ``id`` when one can be read, else ``null``. ``check()`` gives that
answer, or ``None`` for a message the SDK accepts. It needs no ``mcp``: the
parser is pydantic-core's, the one the SDK parses with. Everything ``check()``
passes, the SDK's own envelope validation accepts as the same kind of message
(a test holds the two together), so nothing passed on is dropped later.

Batches: MCP 2025-11-25 removed JSON-RPC batching, so an array is never
served. JSON-RPC 2.0 section 6 decides the reply: an empty array is one
``-32600`` with ``id: null``; otherwise the reply is an array with one error
per element that is a request (its ``id``, "batches are not supported") or is
not a valid message (its own error); notifications and responses inside the
batch get nothing, and a batch of nothing but those gets no reply at all
(the spec forbids an empty array), so ``check()`` returns a rejection whose
``payload()`` is ``None``.

Messages name the member and what was wrong; values are quoted short, never
whole, since they come from the client.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

import pydantic_core

__all__ = [
    "INVALID_REQUEST",
    "PARSE_ERROR",
    "Rejection",
    "check",
    "error_response",
    "too_long",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

_QUOTE_LIMIT: Final = 40
_ID_WINDOW: Final = 64 * 1024
"""Characters of an over-long message read for its id: an id comes near the start."""
_BATCH: Final = (
    "batches are not supported: MCP 2025-11-25 removed JSON-RPC batching; "
    "send each message as its own JSON object"
)

RequestId = str | int | float


@dataclass(frozen=True)
class Rejection:
    """An invalid incoming text and the JSON-RPC error(s) that answer it.

    ``errors`` holds one ``(id, code, message)`` per answer. A single message
    has one; a batch has one per element that gets an answer, possibly none.
    """

    errors: tuple[tuple[RequestId | None, int, str], ...]
    batch: bool = False

    @property
    def code(self) -> int:
        """The code of the first answer (the only one for a single message)."""
        return self.errors[0][1] if self.errors else INVALID_REQUEST

    @property
    def message(self) -> str:
        return self.errors[0][2] if self.errors else _BATCH

    def payload(self) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The JSON value to send back; ``None`` when JSON-RPC says send nothing."""
        answers = [error_response(id_, code, message) for id_, code, message in self.errors]
        if not self.batch:
            return answers[0]
        return answers or None

    def to_json(self) -> str | None:
        """The reply as one line of compact JSON (no newline), or ``None``."""
        payload = self.payload()
        return None if payload is None else json.dumps(payload, separators=(",", ":"))


def error_response(id_: RequestId | None, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response object."""
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def check(text: str | bytes) -> Rejection | None:
    """``None`` when ``text`` is one valid JSON-RPC message, else the answer to send.

    Whitespace-only text is not a message; callers skip it before asking.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _single(None, PARSE_ERROR, f"Parse error: not UTF-8 ({exc.reason})")
    try:
        # The SDK's own parser, so what parses here parses there; NaN and
        # Infinity are not JSON, whatever its default says.
        value = pydantic_core.from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        return _single(None, PARSE_ERROR, f"Parse error: {exc}")
    if isinstance(value, list):
        return _check_batch(value)
    problem = _problem(value)
    return None if problem is None else Rejection((problem,))


def too_long(start: str, limit: int) -> Rejection:
    """The ``-32600`` for a message over ``limit`` characters; ``start`` is its first part.

    The id is answered when the start shows it whole: a key of the top-level
    object followed by another key, so it cannot be cut short; else ``null``.
    """
    id_: RequestId | None = None
    try:
        value = pydantic_core.from_json(start[:_ID_WINDOW], allow_partial=True)
    except ValueError:
        value = None
    if isinstance(value, dict) and "id" in value and next(reversed(value)) != "id":
        id_ = _usable_id(value)
    return _single(
        id_,
        INVALID_REQUEST,
        f"Invalid Request: the message is longer than this server's limit of {limit:,} "
        "characters on one line, and was dropped; send smaller messages (split a large "
        "argument over several calls)",
    )


def _single(id_: RequestId | None, code: int, message: str) -> Rejection:
    return Rejection(((id_, code, message),))


def _check_batch(items: list[Any]) -> Rejection:
    if not items:
        return Rejection(((None, INVALID_REQUEST, f"Invalid Request: empty array; {_BATCH}"),))
    errors: list[tuple[RequestId | None, int, str]] = []
    for item in items:
        problem = _problem(item)
        if problem is not None:
            errors.append(problem)
        elif "method" in item and "id" in item:
            errors.append((item["id"], INVALID_REQUEST, f"Invalid Request: {_BATCH}"))
        # A notification or a response in a batch is answered by nothing.
    return Rejection(tuple(errors), batch=True)


def _problem(value: Any) -> tuple[RequestId | None, int, str] | None:
    """What makes ``value`` an invalid message, as ``(id, code, message)``, or ``None``."""
    if not isinstance(value, dict):
        return (
            None,
            INVALID_REQUEST,
            (f"Invalid Request: a JSON-RPC message must be an object, not {_kind(value)}"),
        )
    if "method" in value:
        return _request_problem(value)
    if "result" in value or "error" in value:
        problem = _response_problem(value)
        # Never echo a response's id: it is one of the server's request ids,
        # and the client would take the error for the answer to its own.
        return None if problem is None else (None, INVALID_REQUEST, f"Invalid Request: {problem}")
    return (
        _usable_id(value),
        INVALID_REQUEST,
        (
            'Invalid Request: a message needs "method" (a request or notification) '
            'or "result" or "error" (a response)'
        ),
    )


def _request_problem(value: dict[str, Any]) -> tuple[RequestId | None, int, str] | None:
    id_ = _usable_id(value)
    problem = _version_problem(value)
    if problem is None and not isinstance(value["method"], str):
        problem = f'"method" must be a string, not {_kind(value["method"])}'
    if problem is None and "params" in value:
        params = value["params"]
        if isinstance(params, list):
            problem = '"params" must be an object, not an array (MCP has no positional params)'
        elif params is not None and not isinstance(params, dict):
            problem = f'"params" must be an object, not {_kind(params)}'
    if problem is None and "id" in value:
        problem = _id_problem(value["id"], nullable=False)
    return None if problem is None else (id_, INVALID_REQUEST, f"Invalid Request: {problem}")


def _response_problem(value: dict[str, Any]) -> str | None:
    problem = _version_problem(value)
    if problem is not None:
        return problem
    if "result" in value and "error" in value:
        return 'a response has "result" or "error", not both'
    if "id" not in value:
        return 'a response needs "id"'
    if "result" in value:
        if not isinstance(value["result"], dict):
            return f'"result" must be an object, not {_kind(value["result"])}'
        return _id_problem(value["id"], nullable=False)
    error = value["error"]
    if not isinstance(error, dict):
        return f'"error" must be an object, not {_kind(error)}'
    if not _is_int(error.get("code")):
        return '"error.code" must be an integer'
    if not isinstance(error.get("message"), str):
        return '"error.message" must be a string'
    return _id_problem(value["id"], nullable=True)


def _version_problem(value: dict[str, Any]) -> str | None:
    if "jsonrpc" not in value:
        return '"jsonrpc" is missing; it must be "2.0"'
    if value["jsonrpc"] != "2.0":
        return f'"jsonrpc" must be "2.0", got {_quote(value["jsonrpc"])}'
    return None


def _id_problem(id_: Any, *, nullable: bool) -> str | None:
    if isinstance(id_, str) or _is_int(id_) or (nullable and id_ is None):
        return None
    if id_ is None:
        return '"id" must not be null (MCP requests carry a string or integer id)'
    return f'"id" must be a string or an integer, got {_quote(id_)}'


def _usable_id(value: dict[str, Any]) -> RequestId | None:
    """The id to answer with: one JSON-RPC allows (string or number), else null."""
    id_ = value.get("id")
    if isinstance(id_, str | int | float) and not isinstance(id_, bool):
        return id_ if not isinstance(id_, float) or math.isfinite(id_) else None
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({json.dumps(value)})"
    if isinstance(value, int | float):
        return f"a number ({_quote(value)})"
    if isinstance(value, str):
        return f"a string ({_quote(value)})"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _quote(value: Any) -> str:
    """``value`` as JSON, cut to a short prefix: it comes from the client."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _QUOTE_LIMIT else text[: _QUOTE_LIMIT - 3] + "..."
