"""What the drawing tools' schemas need from the drawing, without loading it.

The tools are declared when the server starts; the drawing itself (its
document, geometry and history) loads with the first call that uses it.
"""

from __future__ import annotations

from typing import Final

TOOLS: Final = ("select", "rect", "ellipse", "polygon", "line", "stroke")
SHAPES: Final = ("rect", "ellipse", "polygon")
MATCH_MODES: Final = ("intersects", "inside")
OPEN_KINDS: Final = ("line", "stroke")
"""Kinds that are only an outline: they have no fill."""


class DrawingError(ValueError):
    """A request the drawing refuses; the message says what to do instead."""
