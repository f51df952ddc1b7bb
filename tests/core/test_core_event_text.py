"""The log's line is the same bytes whether an event writes its text itself or through its object.

``Event.to_text`` builds a line's JSON without the dict (it runs for every
tools/call); what a reader gets must not change: ``encode`` must give the
bytes the object encoded by ``json`` gives, for any field values.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.server.eventlog import GENESIS, LogFollower
from agent_presets.server.events import (
    MAX_TEXT,
    ArgShape,
    Call,
    Change,
    ContextChange,
    Decision,
    Event,
    EventLog,
    Refusal,
    Request,
    check_event,
    encode,
    verify_log,
)

_ENCODER = json.JSONEncoder(separators=(",", ":"))


def by_object(event: Event, prev: str | None) -> bytes:
    """The line as the log wrote it before ``to_text``: the object, encoded by ``json``."""
    line = event.to_json()
    if prev is not None:
        line["prev"] = prev
    return (_ENCODER.encode(line) + "\n").encode("ascii")


# Any text an agent could send: surrogates, control characters, quotes, long names.
characters = st.characters(codec=None)
texts = st.text(characters, max_size=12) | st.text(
    characters, min_size=MAX_TEXT - 1, max_size=MAX_TEXT + 3
)
maybe = st.none() | texts
numbers = st.floats(allow_nan=True, allow_infinity=True) | st.integers(0, 2**70)
shapes = st.builds(
    ArgShape,
    st.sampled_from(["string", "number", "integer", "boolean", "null", "array", "object"]),
    st.none() | st.integers(0, 10**6),
)

calls = st.builds(
    Call,
    ts=numbers,
    token=maybe,
    tool=texts,
    preset=maybe,
    ok=st.booleans(),
    latency_ms=numbers,
    args=st.dictionaries(texts, shapes, max_size=4),
    args_more=st.integers(0, 10**9),
    error=maybe,
    arg=maybe,
    principal=maybe,
    outcome=st.sampled_from([None, "ok", "error", "bad-arguments", "cancelled"]),
    reason=st.sampled_from([None, "context", "override"]),
    confirm=st.sampled_from([None, "approved", "denied", "expired", "withdrawn"]),
)
refusals = st.builds(
    Refusal,
    tool=maybe,
    tool_len=st.none() | st.integers(0, 10**6),
    tool_sha256=maybe,
    gate=texts,
    preset=maybe,
    count=st.integers(0, 10**6),
    principal=maybe,
    token=maybe,
)
contexts = st.builds(
    ContextChange,
    fields=st.dictionaries(texts, st.none() | st.booleans() | texts, max_size=4),
    by=texts,
)
events = calls | refusals | contexts


@settings(max_examples=examples(400), deadline=None)
@given(events, st.none() | st.text(st.characters(codec=None), max_size=40))
def test_an_event_writes_the_bytes_its_object_encodes_to(event: Event, prev: str | None) -> None:
    assert encode(event, prev) == by_object(event, prev)


def test_every_kind_writes_the_bytes_its_object_encodes_to() -> None:
    kinds: list[Event] = [
        Call(tool="space_unit_list", preset="p", ok=True, latency_ms=0.25, principal="local"),
        Call(tool="t", ok=False, latency_ms=float("nan"), args={"a": ArgShape("string", 3)}),
        Refusal(tool=None, tool_len=3, tool_sha256="abc", gate="preset"),
        Request(id="r1", asks="override", preset="p", state="on"),
        Decision(id="r1", asks="call", outcome="denied", by="console", tool="t"),
        Change(preset="p", state="off", previous="on", by="cli"),
        ContextChange(fields={"mode": "edit", "dark": True, "x": None}, by="cli"),
    ]
    for event in kinds:
        for prev in (None, GENESIS):
            assert encode(event, prev) == by_object(event, prev), type(event).__name__


def test_a_long_or_odd_value_reads_back_as_the_object_had_it(tmp_path: Any) -> None:
    """Clipped, escaped, non-finite: what a reader parses equals the event's object."""
    log = EventLog(tmp_path / "events.jsonl")
    odd = Call(
        tool="x" * (MAX_TEXT + 5),
        preset="\ud800\n\"'",
        ok=True,
        latency_ms=math.inf,
        args={"\x00" + "k" * 300: ArgShape("array", 2)},
        principal="local",
    )
    refusal = Refusal(tool="t", gate="budget", count=7)
    log.write(odd)
    log.write(refusal)
    log.close()
    follower = LogFollower(tmp_path / "events.jsonl")
    _gone, read = follower.read()
    got = [event for _key, event in read]
    follower.close()
    assert [{k: v for k, v in e.items() if k != "prev"} for e in got] == [
        json.loads(_ENCODER.encode(odd.to_json())),
        json.loads(_ENCODER.encode(refusal.to_json())),
    ]
    check_event(got[1])
    assert verify_log(tmp_path / "events.jsonl").broken is None
