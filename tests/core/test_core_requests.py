"""The pending-request store: merging, the limit, expiry, and deciding once."""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from agent_presets.server.events import Decision, Event, Request
from agent_presets.server.requests import (
    MAX_PENDING,
    MAX_PER_PRINCIPAL,
    RequestLimitError,
    RequestStore,
    UnknownRequestError,
)

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def store(**kwargs: object) -> tuple[RequestStore, list[Event], Clock]:
    events: list[Event] = []
    clock = Clock()
    return RequestStore(emit=events.append, clock=clock, **kwargs), events, clock  # type: ignore[arg-type]


def test_a_repeated_override_request_merges_into_the_waiting_one() -> None:
    requests, events, clock = store()
    first, merged_first = requests.file("override", preset="p", state="on", reason="one")
    clock.now += 60
    again, merged_again = requests.file("override", preset="p", state="on", reason="two")
    assert (merged_first, merged_again) == (False, True)
    assert again is first and again.id == "r1"
    assert again.reason == "two"
    assert again.expires == first.created + requests.ttl  # asking again does not renew it
    assert len(requests) == 1
    assert [type(e) for e in events] == [Request]  # one request line, not two


def test_requests_for_different_changes_do_not_merge() -> None:
    requests, _, _ = store()
    a, _ = requests.file("override", preset="p", state="on", reason="x")
    b, _ = requests.file("override", preset="q", state="on", reason="x")
    c, _ = requests.file("call", tool="space_t", preset="p", reason="x")
    d, _ = requests.file("call", tool="space_t", preset="p", reason="x")
    assert len({a.id, b.id, c.id, d.id}) == 4


def test_the_request_past_the_limit_is_refused_and_says_what_to_do() -> None:
    requests, _, _ = store()
    for n in range(MAX_PENDING):
        who = f"agent{n // MAX_PER_PRINCIPAL}"
        requests.file("override", preset=f"p{n}", state="on", reason="x", principal=who)
    with pytest.raises(RequestLimitError, match=r"already wait for the user.*do not ask again"):
        requests.file("override", preset="one-more", state="on", reason="x", principal="new")
    assert len(requests) == MAX_PENDING
    # Asking again for a waiting change is no new request: it still merges.
    _, merged = requests.file("override", preset="p3", state="on", reason="y", principal="agent0")
    assert merged


def test_one_principal_cannot_take_every_slot_from_the_others() -> None:
    """Issue 27: alice's requests filled the store, and bob could not ask or confirm."""
    requests, _, clock = store()
    for n in range(MAX_PER_PRINCIPAL):
        requests.file("override", preset=f"p{n}", state="on", reason="x", principal="alice")
    for kind, more in (("override", {"preset": "p9", "state": "on"}), ("call", {"tool": "t"})):
        with pytest.raises(RequestLimitError, match=r"of yours already wait.*one caller may have"):
            requests.file(kind, reason="x", principal="alice", **more)  # type: ignore[arg-type]
    # Renewing hers keeps her slots, and takes none of bob's.
    clock.now += 300
    for n in range(MAX_PER_PRINCIPAL):
        _, merged = requests.file(
            "override", preset=f"p{n}", state="on", reason="again", principal="alice"
        )
        assert merged
    call, merged = requests.file("call", tool="space_write", reason="x", principal="bob")
    assert not merged and call.principal == "bob"
    override, _ = requests.file("override", preset="p0", state="on", reason="x", principal="bob")
    assert override.principal == "bob" and len(requests) == MAX_PER_PRINCIPAL + 2


def test_asking_again_does_not_keep_a_request_alive_past_its_ttl() -> None:
    requests, _, clock = store(ttl=60)
    first, _ = requests.file("override", preset="p", state="on", reason="x", principal="alice")
    for _ in range(5):
        clock.now += 20
        requests.file("override", preset="p", state="on", reason="x", principal="alice")
    assert first.outcome.done() and first.outcome.result() == "expired"
    (now,) = requests.pending()
    assert now.id != first.id and now.expires == now.created + 60


def test_a_request_expires_and_its_outcome_and_the_log_say_so() -> None:
    requests, events, clock = store(ttl=30)
    request, _ = requests.file("override", preset="p", state="on", reason="secret plan")
    clock.now += 29
    assert [r.id for r in requests.pending()] == ["r1"]
    clock.now += 2
    assert requests.pending() == []
    assert request.outcome.result(timeout=0) == "expired"
    decision = events[-1]
    assert isinstance(decision, Decision)
    assert (decision.outcome, decision.by, decision.id) == ("expired", "timeout", "r1")
    with pytest.raises(UnknownRequestError, match="expired"):
        requests.decide("r1", "approved", by="cli")


def test_a_request_is_decided_once() -> None:
    requests, events, _ = store()
    request, _ = requests.file("override", preset="p", state="on", reason="x")
    requests.decide(request.id, "denied", by="cli")
    assert request.outcome.result(timeout=0) == "denied"
    with pytest.raises(UnknownRequestError, match="no pending request 'r1'"):
        requests.decide(request.id, "approved", by="console")
    assert [e.outcome for e in events if isinstance(e, Decision)] == ["denied"]


def test_an_unknown_id_gets_the_closest_pending_one() -> None:
    requests, _, _ = store()
    requests.file("override", preset="p", state="on", reason="x")
    with pytest.raises(UnknownRequestError, match="did you mean 'r1'"):
        requests.get("r11")


def test_the_json_of_a_request_has_the_documented_fields() -> None:
    requests, _, _ = store()
    override, _ = requests.file("override", preset="p", state="on", reason="why")
    call, _ = requests.file("call", preset="p", tool="space_run", reason="")
    data = override.to_json()
    assert list(data) == [
        "id",
        "kind",
        "principal",
        "preset",
        "state",
        "reason",
        "created",
        "expires",
    ]
    assert (data["kind"], data["state"], data["reason"]) == ("override", "on", "why")
    assert ISO_UTC.match(data["created"]) and ISO_UTC.match(data["expires"])
    assert data["expires"] > data["created"]
    assert call.to_json()["tool"] == "space_run" and "state" not in call.to_json()


def test_the_reason_never_reaches_an_event() -> None:
    requests, events, _ = store()
    request, _ = requests.file("override", preset="p", state="on", reason="SECRET-REASON")
    requests.decide(request.id, "approved", by="cli")
    assert events and all("SECRET-REASON" not in str(e.to_json()) for e in events)


def test_a_waiting_call_can_await_its_outcome_on_the_event_loop() -> None:
    requests, _, _ = store()
    request, _ = requests.file("call", preset="p", tool="space_run", reason="x")

    async def wait() -> str:
        threading.Timer(0.05, requests.decide, (request.id, "approved"), {"by": "cli"}).start()
        return await asyncio.wait_for(asyncio.wrap_future(request.outcome), 30)

    assert asyncio.run(wait()) == "approved"


def test_listeners_hear_when_the_pending_set_changes() -> None:
    requests, _, clock = store(ttl=10)
    heard: list[int] = []
    requests.add_on_change(lambda: heard.append(len(requests)))
    requests.file("override", preset="p", state="on", reason="x")
    requests.file("override", preset="q", state="on", reason="x")
    requests.decide("r1", "denied", by="cli")
    clock.now += 11
    requests.expire()
    assert heard == [1, 2, 1, 0]
