"""``presets serve`` with parts of a call taken away, to measure what each part costs.

Run: python bench/ablate.py PARTS serve [SERVE-OPTIONS...]

PARTS is a comma list of:

- ``priming``: no priming event on a 2025-11-25 POST's SSE stream (the SDK
  sends one, an id and empty data, before anything else whenever the server
  has an event store, so that a client cut off before the first message can
  resume the stream);
- ``event-store``: no event store at all: no priming event, no event ids, no
  resumable streams;
- ``envelope``: no JSON-RPC envelope check before the SDK (``EnvelopeCheck``
  passes every body on unread).

The event log has an option of its own (``presets serve --no-event-log``),
so it is not a part here. ``bench/eras.py --ablate`` and ``bench/wire.py
--ablate`` start the servers through this script; it patches the running
process only, after importing, and changes no file. Every part is a
guarantee users have today: this is for measuring, never for serving.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def _no_priming() -> None:
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    # The SDK's own (private) step: if it is gone, the part cannot be taken away here.
    if not hasattr(StreamableHTTPServerTransport, "_mint_priming_event"):
        raise SystemExit("ablate.py: this mcp SDK mints no priming event where 2.3 did")

    async def mint(self: Any, stream_id: Any, protocol_version: str) -> None:
        return None

    StreamableHTTPServerTransport._mint_priming_event = mint  # type: ignore[method-assign]


def _no_event_store() -> None:
    from agent_presets.server.mcp import eventstore

    class Absent(eventstore.MemoryEventStore):
        """A store the SDK reads as none (it asks ``if event_store:``)."""

        def __bool__(self) -> bool:
            return False

    eventstore.MemoryEventStore = Absent  # type: ignore[misc]


def _no_envelope() -> None:
    from agent_presets.server.mcp.http import EnvelopeCheck

    EnvelopeCheck._judges = lambda self, scope: False  # type: ignore[method-assign]


PARTS: dict[str, Callable[[], None]] = {
    "priming": _no_priming,
    "event-store": _no_event_store,
    "envelope": _no_envelope,
}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    parts = [p for p in argv[0].split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown or not parts:
        what = f"unknown part {unknown[0]!r}" if unknown else "no part given"
        print(f"ablate.py: {what}; choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    for part in parts:
        PARTS[part]()
    from agent_presets.__main__ import main as presets  # as `python -m agent_presets` runs

    sys.argv = ["presets", *argv[1:]]
    presets()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
