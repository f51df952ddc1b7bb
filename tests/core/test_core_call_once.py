"""A call is opened once: its tool is resolved once, and its one record makes one line.

Every ``tools/call`` arrives at one place, where its ``PendingCall`` is made
with the tool its name is served as to its caller; the stages, the tasks
path, ``presets_call`` and a stable caller's notice all read it there. The
tool registry's lookup is counted in both protocol eras, for a direct call,
a call through ``presets_call``, a task-capable tool and a name that is not
served. And whatever ends a call, its event-log line has the same keys.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from agent_presets.lib.boot import Presets
from agent_presets.server.events import read_events
from agent_presets.server.mcp.server import PresetServer
from agent_presets.server.policy import Allowed, Profile, ToolPolicy
from agent_presets.server.stage import PendingCall
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio

THEME = "space_app_set_theme"
TERRAIN = "space_scene_add_terrain"  # may run as a task (task_support "optional")
WRITE = "space_app_write_file"  # risky: --confirm asks a person first
CALL, RISKY = "space_presets_call", "space_presets_call_risky"
ERAS = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


@pytest.fixture(scope="module")
def presets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Presets]:
    folder = tmp_path_factory.mktemp("context")
    with SpaceHost(folder / "state", root=folder / "files") as host:
        yield host.start()


@asynccontextmanager
async def counted(presets: Presets, mode: str) -> AsyncIterator[tuple[Client, Counter[str]]]:
    """A client of a fresh server over ``presets``, and the tool registry's lookups by name."""
    server = PresetServer(presets, discovery="search")
    registry = presets.tool_registry
    lookups: Counter[str] = Counter()
    get = registry.get

    def counting(name: str) -> Any:
        lookups[name] += 1
        return get(name)

    registry.get = counting  # type: ignore[method-assign]
    try:
        async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
            lookups.clear()  # what the handshake looked up is not a call's
            yield client, lookups
    finally:
        del registry.get
        server.close()


@ERAS
@pytest.mark.parametrize(
    ("name", "arguments", "tool"),
    [
        (THEME, {"theme": "dark"}, THEME),
        (CALL, {"name": THEME, "arguments": {"theme": "light"}}, THEME),
        (TERRAIN, {"no_such_argument": 1}, TERRAIN),
        ("space_drawing_insert_shape", {}, "space_drawing_insert_shape"),
    ],
    ids=["direct", "presets_call", "task-capable", "not-served"],
)
async def test_a_tools_call_resolves_its_tool_once(
    presets: Presets, mode: str, name: str, arguments: dict[str, Any], tool: str
) -> None:
    async with counted(presets, mode) as (client, lookups):
        await client.call_tool(name, arguments)
    assert lookups == {tool: 1}


# ------------------------------------------------------------------ one line, one key set

PROFILES = {"narrow": Profile("narrow", Allowed(frozenset({THEME}), (THEME,)))}


async def test_every_outcome_makes_a_line_with_the_same_keys(tmp_path: Path) -> None:
    with SpaceHost(tmp_path / "state", root=tmp_path / "files") as host:
        presets = host.start()
        presets.manager.set_override("general-file-write-tools", "on")
        log = tmp_path / "events.jsonl"
        server = PresetServer(
            presets,
            policy=ToolPolicy(event_log=log, profiles=PROFILES.get, max_calls_per_tool=1),
            confirm="risky",
            confirm_timeout=0.05,
            discovery="search",
        )
        try:
            calls: list[tuple[str, dict[str, Any], str | None]] = [
                (THEME, {"theme": "dark"}, None),  # ok
                (THEME, {"theme": "light"}, None),  # its budget is spent: refused
                (THEME, {"theme": "dark"}, None),  # counted, and summed up on close
                ("space_scene_select_object", {"object_id": "nothing-here"}, None),  # error
                ("space_app_set_activity", {"activity": 7}, None),  # bad arguments
                ("space_drawing_insert_shape", {}, None),  # not active: refused
                ("space_no_such_tool", {"x": 1}, None),  # unknown: refused
                ("space_app_set_canvas_visible", {"visible": True}, "narrow"),  # token's allow
                (WRITE, {"path": "a.txt", "content": "hi"}, None),  # nobody confirms: refused
            ]
            for name, arguments, token in calls:
                await server.run_call(PendingCall(name, arguments, token))
            async with Client(server, mode="legacy") as client:  # through presets_call
                risky = {"name": WRITE, "arguments": {"path": "b.txt", "content": "hi"}}
                await client.call_tool(CALL, risky)  # a risky tool: bad arguments
        finally:
            server.close()
    lines = [e for e in read_events(log) if e["kind"] in ("call", "refusal")]
    outcomes = Counter((e["kind"], e["outcome"], e["gate"]) for e in lines)
    assert outcomes == {
        ("call", "ok", None): 1,
        ("refusal", "refused", "budget"): 2,  # the first, and the summary of the rest
        ("call", "error", None): 1,
        ("call", "bad-arguments", None): 2,
        ("refusal", "refused", "preset"): 2,
        ("refusal", "refused", "allow-list"): 1,
        ("refusal", "refused", "confirm"): 1,
    }
    assert len({frozenset(e) for e in lines}) == 1, [sorted(e) for e in lines]
    refused = [e for e in lines if e["kind"] == "refusal"]
    assert all(e["latency_ms"] > 0 and e["ok"] is False for e in refused)
    # A name no plugin provides, and the argument names sent with it, are the agent's text.
    [unknown] = [e for e in refused if e["tool"] is None]
    assert unknown["tool_len"] == len("space_no_such_tool")
    assert [name[:7] for name in unknown["args"]] == ["sha256:"]
