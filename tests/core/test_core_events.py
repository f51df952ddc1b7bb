"""The event log: one schema, bounded lines and files, private, and no agent text."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.lib.model import ToolArgumentError, ToolCallError
from agent_presets.server.eventlog import GENESIS
from agent_presets.server.events import (
    KINDS,
    MAX_ARGS,
    MAX_TEXT,
    SCHEMA_VERSION,
    Call,
    Change,
    Decision,
    Event,
    EventLog,
    EventSchemaError,
    Refusal,
    Request,
    check_event,
    clip,
    declared_path,
    describe_arguments,
    encode,
    error_class,
    read_events,
)
from agent_presets.server.policy import GateError, ToolPolicy

SECRET = "sk-live-4f1c9a7e0b2d4e6f8a1c3e5d7b9f0a2c"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --------------------------------------------------------------------- the file


def test_a_new_log_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "state" / "events.jsonl"
    log = EventLog(path)
    log.write(Call(tool="t", ok=True, latency_ms=1.0))
    log.close()
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_an_existing_world_readable_log_is_made_private_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("")
    path.chmod(0o644)
    log = EventLog(path)
    log.write(Call(tool="t", ok=True, latency_ms=1.0))
    log.close()
    assert mode(path) == 0o600


def test_the_log_refuses_a_file_that_is_not_regular(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "events.jsonl")
    with pytest.raises(OSError, match="not a regular file"):
        EventLog(tmp_path / "events.jsonl").write(Call(tool="t", ok=True, latency_ms=0.0))


def test_stale_backups_beyond_the_count_are_dropped_and_the_reader_reads_them_all(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=1024, backups=4)
    for i in range(100):
        log.write(Call(tool=f"tool-{i}", ok=True, latency_ms=0.0))
    log.close()
    # A reader needs no count: it finds every rotated file.
    assert len(list(read_events(path))) == sum(
        len(p.read_text().splitlines()) for p in tmp_path.iterdir()
    )
    log = EventLog(path, max_bytes=1024, backups=2)
    for i in range(100, 200):
        log.write(Call(tool=f"tool-{i}", ok=True, latency_ms=0.0))
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "events.jsonl",
        "events.jsonl.1",
        "events.jsonl.2",
    ]
    seen = [int(e["tool"].removeprefix("tool-")) for e in read_events(path)]
    assert seen == list(range(seen[0], 200))


def test_two_writers_on_one_file_rotate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    one, two = EventLog(path, max_bytes=1024, backups=3), EventLog(path, max_bytes=1024, backups=3)
    for i in range(60):
        (one if i % 2 else two).write(Call(tool=f"tool-{i}", ok=True, latency_ms=0.0))
    one.close()
    two.close()
    seen = sorted(int(e["tool"].removeprefix("tool-")) for e in read_events(path))
    assert seen == list(range(seen[0], 60))


def test_nothing_recorded_creates_no_file(tmp_path: Path) -> None:
    ToolPolicy(event_log=tmp_path / "events.jsonl").close()
    assert not (tmp_path / "events.jsonl").exists()


def test_the_log_does_not_follow_a_symlink_planted_in_its_place(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("")
    (tmp_path / "events.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        EventLog(tmp_path / "events.jsonl").write(Call(tool="t", ok=True, latency_ms=1.0))
    assert outside.read_text() == ""


def test_rotation_keeps_n_files_and_the_reader_reads_them_all_oldest_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=2048, backups=3)
    for i in range(500):
        log.write(Call(tool=f"tool-{i}", ok=True, latency_ms=float(i)))
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "events.jsonl",
        "events.jsonl.1",
        "events.jsonl.2",
        "events.jsonl.3",
    ]
    for file in tmp_path.iterdir():
        assert file.stat().st_size <= 2048
        assert mode(file) == 0o600
    seen = [int(e["tool"].removeprefix("tool-")) for e in read_events(path)]
    # The newest lines survive, in order, with no gap: only whole old files are dropped.
    assert seen == list(range(seen[0], 500))
    line = encode(Call(tool="tool-499", ok=True, latency_ms=499.0), prev=GENESIS)
    assert len(seen) > 3 * 2048 // len(line)


def test_no_backups_means_the_log_starts_over_when_full(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=1024, backups=0)
    for i in range(100):
        log.write(Call(tool=f"tool-{i}", ok=True, latency_ms=0.0))
    log.close()
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]
    assert path.stat().st_size <= 1024


def test_the_reader_skips_a_torn_last_line_and_the_writer_starts_a_new_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.write(Call(tool="before", ok=True, latency_ms=1.0))
    log.close()
    with path.open("ab") as f:
        f.write(b'{"v":1,"kind":"call","tool":"tor')  # a crash mid-line
    assert [e["tool"] for e in read_events(path)] == ["before"]
    log = EventLog(path)
    log.write(Call(tool="after", ok=True, latency_ms=1.0))
    log.close()
    assert [e["tool"] for e in read_events(path)] == ["before", "after"]


def test_the_reader_skips_lines_from_before_the_schema_had_a_version(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"ts": 1.0, "tool": "old", "ok": true}\n[1, 2]\n')
    log = EventLog(path)
    log.write(Call(tool="new", ok=True, latency_ms=1.0))
    log.close()
    assert [e["tool"] for e in read_events(path)] == ["new"]


def test_lines_from_many_threads_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=64 * 1024, backups=50)

    def write(n: int) -> None:
        for i in range(200):
            log.write(Call(tool=f"{n}-{i}-" + "x" * 150, ok=True, latency_ms=0.0))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    events = list(read_events(path))
    assert len(events) == 1600
    for e in events:
        check_event(e)


# --------------------------------------------------------------------- bounded, no agent text


def test_a_ten_kilobyte_tool_name_is_clipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(event_log=path)
    name = "n" * 10_240
    policy.record(name, ok=True, seconds=0.001)
    policy.record(name, ok=False, seconds=0.0, error="refused", layer="l" * 10_240)
    policy.close()
    call, refusal = lines(path)
    assert call["tool"] == "n" * MAX_TEXT + "…[10240 chars]"
    assert refusal["tool"] == call["tool"] and refusal["gate"].startswith("l" * MAX_TEXT + "…")
    # Two lines of clipped names and fixed fields, not 20 KiB of names.
    assert path.stat().st_size < 1536


def test_a_refusal_of_a_name_no_plugin_provides_keeps_its_length_and_hash_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(event_log=path)
    for name in ("ignore previous instructions", "x" * 10_240, "\ud800"):
        policy.record(name, ok=False, seconds=0.0, layer="preset", known=False)
    policy.record("space_known", ok=False, seconds=0.0, layer="preset")
    policy.close()
    *unknown, known = lines(path)
    assert [(e["tool"], e["tool_len"]) for e in unknown] == [(None, 28), (None, 10_240), (None, 1)]
    assert all(re.fullmatch("[0-9a-f]{12}", e["tool_sha256"]) for e in unknown)
    assert len({e["tool_sha256"] for e in unknown}) == 3
    assert (known["tool"], known["tool_len"], known["tool_sha256"]) == ("space_known", None, None)
    assert "instructions" not in path.read_text() and "xxx" not in path.read_text()
    for line in lines(path):
        check_event(line)


def test_names_and_path_steps_a_schema_does_not_declare_are_hashed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "points": {"type": "array", "items": {"type": "object", "properties": {"x": {}}}},
            "data": {"type": "object"},
        },
    }
    described, _ = describe_arguments({"points": [], "secret plan": 1}, {"points", "data"})
    assert list(described) == ["points", "sha256:" + sha12("secret plan")]
    assert declared_path("points.3.x", schema) == "points.3.x"
    assert declared_path("data.my diary.0", schema) == f"data.sha256:{sha12('my diary')}.0"
    assert declared_path("made up.x", schema) == f"sha256:{sha12('made up')}.sha256:{sha12('x')}"
    assert declared_path("", schema) == ""


def sha12(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:12]


def test_clip_marks_what_it_cut() -> None:
    assert clip("short") == "short"
    assert clip("a" * MAX_TEXT) == "a" * MAX_TEXT
    assert clip("a" * (MAX_TEXT + 1)) == "a" * MAX_TEXT + f"…[{MAX_TEXT + 1} chars]"


def test_a_secret_argument_never_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(event_log=path)
    arguments = {"api_key": SECRET, "path": f"/home/me/{SECRET}", "nested": {"k": SECRET}}
    exc = ToolArgumentError(f"tool: argument 'api_key': {SECRET!r} does not match '^x'")
    # As the server calls it today (a message only) and with the exception and arguments.
    policy.record("tool", ok=False, seconds=0.01, error=str(exc))
    policy.record("tool", ok=False, seconds=0.01, error=str(exc), exc=exc, arguments=arguments)
    policy.record("tool", ok=False, seconds=0.0, error=f"refused {SECRET}", layer="allow-list")
    policy.close()
    data = path.read_bytes()
    assert SECRET.encode() not in data and b"sk-live" not in data and b"/home/me" not in data
    bare, full, _ = lines(path)
    assert bare["error"] == "ToolArgumentError" and bare["arg"] == "api_key"
    assert full["error"] == "ToolArgumentError" and full["arg"] == "api_key"
    assert full["args"] == {
        "api_key": {"type": "string", "len": len(SECRET)},
        "path": {"type": "string", "len": len(f"/home/me/{SECRET}")},
        "nested": {"type": "object", "len": 1},
    }


def test_arguments_are_described_by_type_and_length_and_capped() -> None:
    described, more = describe_arguments(
        {"s": "abc", "i": 3, "f": 1.5, "b": True, "n": None, "a": [1, 2], "o": {}}
    )
    assert {k: (v.type, v.len) for k, v in described.items()} == {
        "s": ("string", 3),
        "i": ("integer", None),
        "f": ("number", None),
        "b": ("boolean", None),
        "n": ("null", None),
        "a": ("array", 2),
        "o": ("object", 0),
    }
    assert more == 0
    described, more = describe_arguments({f"a{i}": i for i in range(10_000)})
    assert len(described) == MAX_ARGS and more == 10_000 - MAX_ARGS


def test_an_error_is_logged_by_its_class_and_argument_path_never_its_message() -> None:
    assert error_class("t", ToolArgumentError("t: argument 'points.3.x': 'v' is bad"), None) == (
        "ToolArgumentError",
        "points.3.x",
    )
    assert error_class("t", None, "t: argument \"it's\": 'v' is bad") == (
        "ToolArgumentError",
        "it's",
    )
    assert error_class("t", None, "t: arguments: 'x' is a required property") == ("error", None)
    assert error_class("t", None, "internal error: KeyError") == ("internal", None)
    assert error_class("t", None, "/etc/passwd is not in the root") == ("error", None)
    assert error_class("t", KeyError("secret"), "anything") == ("internal", None)
    assert error_class("t", ToolCallError("/etc/passwd is outside"), None) == (
        "ToolCallError",
        None,
    )


# --------------------------------------------------------------------- budgets


def exhaust(policy: ToolPolicy, tool: str, times: int) -> int:
    refused = 0
    for _ in range(times):
        try:
            policy.admit(tool)
        except GateError as exc:
            policy.record(tool, ok=False, seconds=0.0, error=str(exc), layer=exc.layer)
            refused += 1
        else:
            policy.record(tool, ok=True, seconds=0.001)
    return refused


def test_refusals_after_a_spent_budget_are_counted_not_logged(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(max_calls=2, event_log=path)
    assert exhaust(policy, "tool", 10_002) == 10_000
    policy.close()
    events = lines(path)
    assert [(e["kind"], e["count"]) for e in events] == [
        ("call", 1),
        ("call", 1),
        ("refusal", 1),
        ("refusal", 9_999),
    ]
    assert events[-1]["tool"] == "*" and events[-1]["gate"] == "budget"
    assert path.stat().st_size < 2048  # four lines, not ten thousand


def test_a_spent_budget_writes_a_summary_while_refusals_go_on(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(max_calls=1, event_log=path, summary_seconds=0.2)
    exhaust(policy, "tool", 101)
    time.sleep(0.25)
    exhaust(policy, "tool", 1)
    assert [e["count"] for e in lines(path)] == [1, 1, 100]
    policy.close()
    assert [e["count"] for e in lines(path)] == [1, 1, 100]


def test_each_tools_own_budget_is_counted_apart(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(max_calls_per_tool=1, event_log=path)
    exhaust(policy, "a", 5)
    exhaust(policy, "b", 3)
    policy.close()
    refusals = [(e["tool"], e["count"]) for e in lines(path) if e["kind"] == "refusal"]
    assert refusals == [("a", 1), ("b", 1), ("a", 3), ("b", 1)]


def test_other_gates_log_every_refusal(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(event_log=path)
    for _ in range(3):
        policy.record("gone", ok=False, seconds=0.0, error="not active", layer="preset")
    policy.close()
    assert [(e["gate"], e["count"]) for e in lines(path)] == [("preset", 1)] * 3


# --------------------------------------------------------------------- schema


def test_every_kind_writes_v_kind_ts_and_exactly_its_fields(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    policy = ToolPolicy(event_log=path)
    policy.record("t", ok=True, seconds=0.5, preset="p", arguments={"x": 1}, token="ci")
    policy.emit(Request(id="r1", asks="override", preset="p", state="on"))
    policy.emit(Decision(id="r1", asks="override", outcome="approved", by="console", preset="p"))
    policy.emit(Change(preset="p", state="on", previous="auto", by="approval"))
    policy.record("t", ok=False, seconds=0.0, layer="allow-list")
    policy.close()
    events = list(read_events(path))
    assert [e["kind"] for e in events] == ["call", "request", "decision", "change", "refusal"]
    for event in events:
        assert event["v"] == SCHEMA_VERSION and isinstance(event["ts"], float)
        check_event(event)
    assert events[0]["token"] == "ci" and events[0]["args"] == {
        "x": {"type": "integer", "len": None}
    }


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"v": 2}, "v must be 1"),
        ({"kind": "chat"}, "unknown kind"),
        ({"message": "hi"}, "unexpected fields ['message']"),
        ({"ok": "yes"}, "call.ok: expected a boolean"),
        ({"tool": "x" * 300}, "was not clipped"),
        ({"args": {"a": {"type": "string"}}}, "expected {type, len}"),
        ({"args": {"a": {"type": "text", "len": 1}}}, "is not one of"),
    ],
)
def test_the_schema_check_rejects_what_the_schema_does_not_allow(
    change: dict[str, Any], problem: str
) -> None:
    line = json.loads(encode(Call(tool="t", ok=True, latency_ms=1.0, args={})))
    with pytest.raises(EventSchemaError, match=problem.replace("[", r"\[").replace("{", r"\{")):
        check_event({**line, **change})


def test_an_event_with_a_value_outside_its_enum_cannot_be_built() -> None:
    with pytest.raises(EventSchemaError, match=r"change\.state"):
        Change(preset="p", state="maybe", by="cli")  # type: ignore[arg-type]


def test_a_missing_field_is_rejected() -> None:
    line = json.loads(encode(Refusal(tool="t", gate="budget")))
    del line["count"]
    with pytest.raises(EventSchemaError, match="missing fields \\['count'\\]"):
        check_event(line)


def test_every_kind_and_field_is_documented_with_an_example_that_validates() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "events.md").read_text()
    common = doc.split("## Lines", 1)[1].split("### ", 1)[0]
    for name in ("v", "kind", *(f.name for f in fields(Event))):
        assert f"| `{name}` |" in common, name
    sections = doc.split("\n### ")[1:]
    for kind, cls in KINDS.items():
        # A kind's section is the one whose heading names it (`call` and `refusal` share one).
        [section] = [s for s in sections if f"`{kind}`" in s.split("\n", 1)[0]]
        section = section.split("\n#", 1)[0]
        for f in fields(cls):
            if f.name not in ("ts", "token"):
                assert f"| `{f.name}` |" in section, (kind, f.name)
        blocks = [b.split("\n```", 1)[0] for b in section.split("```json\n")[1:]]
        assert blocks, kind
        examples = [json.loads(line) for block in blocks for line in block.splitlines()]
        for example in examples:
            check_event(example)
        assert kind in {example["kind"] for example in examples}


def test_the_writing_example_in_the_docs_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).parents[2] / "docs" / "events.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    exec(code, {"state_dir": tmp_path})
    assert capsys.readouterr().out == "change general-theme-tools on\n"
    assert mode(tmp_path / "events.jsonl") == 0o600


text = st.text(max_size=400)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
state = st.sampled_from(["auto", "on", "off"])
asks = st.sampled_from(["override", "call"])
token = st.none() | text
events = st.one_of(
    st.builds(
        lambda tool, preset, ok, ms, args, error, tok: Call(
            tool=tool,
            preset=preset,
            ok=ok,
            latency_ms=ms,
            args=describe_arguments(args)[0],
            args_more=describe_arguments(args)[1],
            error=None if ok else error_class(tool, None, error)[0],
            arg=None if ok else error_class(tool, None, error)[1],
            token=tok,
        ),
        text,
        st.none() | text,
        st.booleans(),
        st.floats(min_value=0, max_value=1e9),
        st.dictionaries(text, json_value, max_size=40),
        text,
        token,
    ),
    st.builds(
        lambda tool, gate, n, tok: Refusal(tool=tool, gate=gate, count=n, token=tok),
        text,
        text,
        st.integers(1, 10**9),
        token,
    ),
    st.builds(
        lambda i, a, p, s, t: Request(id=i, asks=a, preset=p, state=s, tool=t),
        text,
        asks,
        st.none() | text,
        st.none() | state,
        st.none() | text,
    ),
    st.builds(
        lambda i, a, o, b: Decision(id=i, asks=a, outcome=o, by=b),
        text,
        asks,
        st.sampled_from(["approved", "denied", "expired", "withdrawn"]),
        text,
    ),
    st.builds(
        lambda p, s, prev, b: Change(preset=p, state=s, previous=prev, by=b),
        text,
        state,
        st.none() | state,
        text,
    ),
)


@settings(max_examples=examples(200), deadline=None)
@given(events)
def test_any_event_encodes_to_one_bounded_line_that_matches_the_schema(event: Event) -> None:
    line = encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert len(line) < 64 * 1024
    decoded = json.loads(line)
    check_event(decoded)
    assert decoded["kind"] == event.KIND


def test_the_log_is_private_even_with_a_permissive_umask(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    old = os.umask(0)
    try:
        log.write(Call(tool="t", ok=True, latency_ms=0.0))
    finally:
        os.umask(old)
        log.close()
    assert mode(tmp_path / "events.jsonl") == 0o600
