"""Rich tool results: images, audio, embedded resources, and structured content.

A handler returns what it has. A string becomes text; a dict becomes
structured content (with its JSON as text, for clients that read text only);
anything else JSON-serialisable becomes text. To return more than that, return
one of the blocks made here, or a ``ToolResult`` of several::

    from agent_presets import results

    return results.image(png_bytes, "image/png")
    return results.ToolResult([results.text("Saved."), results.resource(uri, text=body)])
    return results.ToolResult([results.text("2 shapes")], structured={"count": 2})

The blocks are plain data (their wire form, built here once); the server
turns them into MCP content blocks without importing anything of this module
but the types.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["Content", "ToolResult", "audio", "image", "resource", "text"]


@dataclass(frozen=True)
class Content:
    """One MCP content block, held in its wire form (``{"type": "image", ...}``)."""

    wire: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "wire", MappingProxyType(dict(self.wire)))


@dataclass(frozen=True)
class ToolResult:
    """A result of several content blocks and, optionally, structured content.

    ``structured`` is checked against the adapter's ``output_schema`` when it
    has one; when ``content`` is empty the server adds the structured content's
    JSON as text, as it does for a plain dict. ``is_error`` marks the result a
    tool error the model reads (``isError``), as an upstream server's own
    error result passes through; its structured content is not checked.
    """

    content: tuple[Content, ...] = ()
    structured: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = field(default=None, compare=False)
    is_error: bool = False

    def __init__(
        self,
        content: Iterable[Content | str] = (),
        structured: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        is_error: bool = False,
    ) -> None:
        blocks = tuple(text(c) if isinstance(c, str) else c for c in content)
        for block in blocks:
            if not isinstance(block, Content):
                raise TypeError(
                    f"ToolResult content must be results.text/image/audio/resource blocks or "
                    f"strings, not {type(block).__name__}"
                )
        if structured is not None and not isinstance(structured, Mapping):
            raise TypeError(
                f"ToolResult structured must be a mapping, not {type(structured).__name__}"
            )
        object.__setattr__(self, "content", blocks)
        object.__setattr__(self, "structured", structured)
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "is_error", bool(is_error))


def text(value: str) -> Content:
    """A text block."""
    return Content({"type": "text", "text": str(value)})


def _base64(data: bytes | str) -> str:
    # A str is taken as already base64-encoded (what a plugin read from JSON).
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def image(data: bytes | str, mime: str = "image/png") -> Content:
    """An image block: ``data`` is the image's bytes (or their base64 text)."""
    return Content({"type": "image", "data": _base64(data), "mimeType": mime})


def audio(data: bytes | str, mime: str = "audio/wav") -> Content:
    """An audio block: ``data`` is the audio's bytes (or their base64 text)."""
    return Content({"type": "audio", "data": _base64(data), "mimeType": mime})


def resource(
    uri: str,
    text: str | None = None,
    *,
    blob: bytes | None = None,
    mime: str | None = None,
) -> Content:
    """An embedded resource: ``uri`` with its ``text``, or its bytes as ``blob``."""
    if (text is None) == (blob is None):
        raise TypeError("results.resource needs text= or blob=, exactly one of them")
    contents: dict[str, Any] = {"uri": uri}
    if mime is not None:
        contents["mimeType"] = mime
    if text is not None:
        contents["text"] = text
    else:
        assert blob is not None
        contents["blob"] = _base64(blob)
    return Content({"type": "resource", "resource": contents})
