"""What the graph tools' schemas need from the graph, without loading it.

The tools are declared when the server starts; the graph model loads with
the first call that uses it.
"""

from __future__ import annotations

from typing import Final

ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
MAX_LABEL: Final = 500
NODE_KINDS: Final = ("node", "identity")


class GraphError(ValueError):
    """A refused graph operation; the message says what to do instead."""
