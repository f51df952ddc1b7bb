"""The control channel's wire protocol: JSON lines, one request and one response per line.

``respond`` turns one request line into one response object for a
``Controller`` and never raises for bad input: every refusal is an error
object with a ``code`` (``docs/control.md`` lists them). The socket that
carries the lines is ``channel``'s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agent_presets.lib.model import (
    PresetError,
    PresetValidationError,
    UnknownPresetError,
)
from agent_presets.lib.vocabulary import ContextValueError
from agent_presets.server.requests import (
    DigestMismatchError,
    UnknownRequestError,
)

if TYPE_CHECKING:
    pass


from agent_presets.server.control.controller import ConfirmationRequired, Controller

log = logging.getLogger("agent_presets.server.control")

PROTOCOL_VERSION: Final = 1


OPS: Final = ("status", "set", "requests", "approve", "deny", "context")


MAX_LINE: Final = 64 * 1024
"""Longest request line (bytes) the server reads; a longer one is refused."""

MAX_DEPTH: Final = 32
"""Deepest nesting of arrays and objects a request may have; a request needs four."""


def decode(data: bytes | str) -> Any:
    """One JSON request (a socket line, a console body), or ``ValueError`` saying why not.

    Python's parser recurses per level and raises ``RecursionError`` (not a
    ``ValueError``) about 1,000 levels down, and 2 KB reach that; anything
    that walks a value after it recurses too. So depth is bounded here, once,
    for every door that takes JSON from outside.
    """
    too_deep = ValueError(f"nested deeper than {MAX_DEPTH} arrays or objects")
    try:
        value = json.loads(data)
    except RecursionError:
        raise too_deep from None
    except ValueError:
        raise ValueError("not JSON") from None
    if _too_deep(value):
        raise too_deep
    return value


def _too_deep(value: Any) -> bool:
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [
            item
            for node in level
            if isinstance(node, (dict, list))
            for item in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, (dict, list)) for node in level)


class ControlError(PresetError):
    """The server refused a control request; ``code`` says why, ``detail`` has the rest."""

    def __init__(self, code: str, message: str, detail: Mapping[str, Any] | None = None) -> None:
        self.code = code
        self.detail = dict(detail or {})
        super().__init__(message)


def respond(controller: Controller, line: bytes) -> dict[str, Any]:
    """The response object for one request line (never raises for bad input)."""
    try:
        message = decode(line)
    except ValueError as exc:
        return error_response("bad-request", f"a request is one JSON object per line ({exc})")
    return answer(controller, message)


def answer(controller: Controller, message: Any) -> dict[str, Any]:
    """The response object for one decoded request (never raises for bad input).

    The socket answers each line with it, and the console's host endpoint
    (``POST /api/context``) answers its body with it, so both refuse alike.
    """
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        return error_response("bad-request", f"a request is an object with an 'op': one of {OPS}")
    try:
        result = _dispatch(controller, message)
    except ConfirmationRequired as exc:
        return error_response("confirm", str(exc), preset=exc.preset, risk=exc.risk)
    except UnknownPresetError as exc:
        return error_response("unknown-preset", str(exc))
    except UnknownRequestError as exc:
        return error_response("unknown-request", str(exc))
    except DigestMismatchError as exc:
        return error_response("digest-mismatch", str(exc))
    except ContextValueError as exc:
        values = None if exc.values is None else list(exc.values)
        return error_response("invalid-context", str(exc), field=exc.field, values=values)
    except PresetError as exc:
        return error_response("invalid", str(exc))
    except Exception:
        log.exception("control request %r failed", message.get("op"))
        return error_response(
            "internal", "the server failed on this request; its log has the details"
        )
    return {"v": PROTOCOL_VERSION, "ok": True, "result": result}


def _dispatch(controller: Controller, message: dict[str, Any]) -> Any:
    op = message["op"]
    by = message.get("by", "cli")
    confirmed = message.get("confirmed") is True
    principal = None if message.get("principal") is None else _text(message, "principal")
    if op == "status":
        return controller.status(principal)
    if op == "requests":
        return controller.pending(principal)
    if op == "set":
        return controller.set_override(
            _text(message, "preset"),
            _text(message, "state"),
            by=by,
            confirmed=confirmed,
            principal=principal,
        )
    if op == "approve":
        digest = message.get("digest")
        return controller.approve(
            _text(message, "id"),
            by=by,
            confirmed=confirmed,
            digest=None if digest is None else _text(message, "digest"),
        )
    if op == "deny":
        return controller.deny(_text(message, "id"), by=by)
    if op == "context":
        changes = message.get("set")
        if not isinstance(changes, dict) or not all(isinstance(k, str) for k in changes):
            raise PresetValidationError("'set' must be an object of field names to values")
        return controller.set_context(changes, by=by, principal=principal)
    raise PresetValidationError(f"unknown op {op!r}; use one of: {', '.join(OPS)}")


def _text(message: Mapping[str, Any], key: str) -> str:
    value = message.get(key)
    if not isinstance(value, str):
        raise PresetValidationError(f"'{key}' must be a string")
    return value


def error_response(code: str, message: str, **detail: Any) -> dict[str, Any]:
    return {
        "v": PROTOCOL_VERSION,
        "ok": False,
        "error": {"code": code, "message": message, **detail},
    }


def encode(response: Mapping[str, Any]) -> bytes:
    return (json.dumps(response, ensure_ascii=True, default=str) + "\n").encode("ascii")
