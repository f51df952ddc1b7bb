"""A 2026-07-28 confirmation asked in a round holds one request slot, and not for long.

Issue 27: every unanswered first round under ``--confirm-via client`` filed
a request that held one of the server's slots for 600 s, so an agent that
called a risky tool again and again, never answering, starved everyone's
confirmations.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as types
import pytest

from agent_presets.lib.model import ToolDef
from agent_presets.lib.principal import acting_as
from agent_presets.server.mcp.confirm import CallConfirmation
from agent_presets.server.mcp.rounds import InputRequired, Rounds
from agent_presets.server.requests import MAX_PER_PRINCIPAL, RequestStore

TOOL = ToolDef(
    "space_write_file",
    "Write a file.",
    {"type": "object"},
    lambda a: "written",
    preset="file-write-tools",
    risk="filesystem-write",
)
MODERN = SimpleNamespace(
    protocol_version="2026-07-28",
    session=SimpleNamespace(
        client_capabilities=types.ClientCapabilities(elicitation=types.ElicitationCapability())
    ),
)


class Clock:
    now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def first_round(confirmation: CallConfirmation, arguments: dict[str, Any], who: str) -> str:
    """Ask as a first round would; the key of the question it asks."""

    async def ask() -> str:
        with acting_as(who), pytest.raises(InputRequired) as asked:
            await confirmation.ask(MODERN, TOOL, arguments, Rounds())  # type: ignore[arg-type]
        (key,) = asked.value.requests
        return key

    return anyio.run(ask)


def test_the_same_unanswered_call_asks_the_same_request_again() -> None:
    requests = RequestStore()
    confirmation = CallConfirmation(requests, "risky", timeout=50, via="client")
    keys = {first_round(confirmation, {"path": "a.txt"}, "alice") for _ in range(10)}
    assert len(keys) == 1 and len(requests) == 1
    # Another call is another question, and bob's own is his.
    assert first_round(confirmation, {"path": "b.txt"}, "alice") not in keys
    assert first_round(confirmation, {"path": "a.txt"}, "bob") not in keys
    assert len(requests) == 3


def test_an_unanswered_round_frees_its_slot_after_the_confirm_timeout() -> None:
    clock = Clock()
    requests = RequestStore(clock=clock)
    confirmation = CallConfirmation(requests, "risky", timeout=50, via="client")
    for n in range(MAX_PER_PRINCIPAL):
        first_round(confirmation, {"path": f"{n}.txt"}, "alice")
    (request, *_) = requests.pending()
    assert request.expires - request.created == 50  # --confirm-timeout, not the 600 s state
    clock.now += 51
    assert requests.pending() == []
    first_round(confirmation, {"path": "again.txt"}, "alice")
    assert len(requests) == 1
