"""How many 2026-07-28 listen streams stay open at once: per principal, and in all.

A ``subscriptions/listen`` stream is a request the server keeps open until
its client goes: a file descriptor, a task and its buffers. Without a bound,
one unauthenticated client opened 19,499 (file descriptors 12 -> 13,534,
RSS 79 -> 392 MB) and a new client's ``tools/list`` took 16 s. Legacy
sessions have ``--max-sessions``; this is the 2026-07-28 equivalent. A
client needs one stream; a stream past either bound is refused at once with
``-32600`` saying which bound and what to do, and the open ones go on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = ["MAX_LISTEN_PER_PRINCIPAL", "MAX_LISTEN_STREAMS", "ListenLimit"]

MAX_LISTEN_STREAMS: Final = 500
"""Listen streams open at once, every principal's together."""
MAX_LISTEN_PER_PRINCIPAL: Final = 50
"""Listen streams one principal may hold open (every unauthenticated client is ``local``)."""


class ListenLimit:
    """Counts the open listen streams; ``admit`` refuses one past a bound."""

    def __init__(
        self, total: int = MAX_LISTEN_STREAMS, per_principal: int = MAX_LISTEN_PER_PRINCIPAL
    ) -> None:
        if total < 1 or per_principal < 1:
            raise ValueError(
                f"listen stream bounds must be at least 1, got {total}, {per_principal}"
            )
        self.total = total
        self.per_principal = per_principal
        self._open: Counter[str] = Counter()

    def __len__(self) -> int:
        return self._open.total()

    @contextmanager
    def admit(self, principal: str) -> Iterator[None]:
        """Hold one of ``principal``'s streams for the block, or raise ``MCPError`` (-32600)."""
        if self._open[principal] >= self.per_principal:
            raise _refused(
                f"{self._open[principal]} listen streams of this caller are open already, the "
                "most one caller may have"
            )
        if len(self) >= self.total:
            raise _refused(
                f"{len(self)} listen streams are open already, the most this server keeps"
            )
        self._open[principal] += 1
        try:
            yield
        finally:
            self._open[principal] -= 1
            if self._open[principal] <= 0:
                del self._open[principal]


def _refused(why: str) -> MCPError:
    return MCPError(
        code=types.INVALID_REQUEST,
        message=(
            f"subscriptions/listen refused: {why}. A client needs one stream, which hears every "
            "change it asked for: close the streams it no longer reads, then listen again"
        ),
    )
