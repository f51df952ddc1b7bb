"""Operator policy on a served surface: allow-list, call budgets, and the event log."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from agent_presets import PresetValidationError
from agent_presets.server import ServeConfig
from agent_presets.server.mcp import PROMPT_URI, STATUS_URI, build_server
from agent_presets.server.policy import ToolPolicy
from agent_presets_general import SpaceHost

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    @asynccontextmanager
    async def serve(**policy: Any) -> AsyncIterator[tuple[Client, ToolPolicy]]:
        host = SpaceHost(tmp_path / "state")
        presets = host.start()
        allow = policy.pop("allow", None)
        tool_policy = ToolPolicy(
            allow=ToolPolicy.allow_list(presets, allow) if allow else None,
            event_log=tmp_path / "events.jsonl",
            **policy,
        )
        server = build_server(presets, ServeConfig(policy=tool_policy))
        try:
            async with Client(server, mode="legacy") as client:
                yield client, tool_policy
        finally:
            server.close()
            host.close()  # the server stops: the state directory is free for the next one

    return serve


def events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_allow_list_narrows_the_listed_tools_to_presets_and_tools(
    serve: Callable[..., Any],
) -> None:
    async with serve(allow=["scene-object-tools", "space_app_switch_surface"]) as (client, _):
        listed = sorted(t.name for t in (await client.list_tools()).tools)
        assert listed == [
            "space_app_switch_surface",
            "space_scene_add_cuboid",
            "space_scene_add_physics_body",
            "space_scene_select_object",
        ]


async def test_a_tool_outside_the_allow_list_is_refused_naming_the_layer(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    async with serve(allow=["scene-object-tools"]) as (client, _):
        result = await client.call_tool("space_app_set_theme", {"theme": "dark"})
        assert result.is_error
        assert "not allowed on this server" in text(result)
        assert "--allow" in text(result)
    [event] = events(tmp_path)
    assert event["tool"] == "space_app_set_theme" and event["gate"] == "allow-list"


def test_unknown_allow_list_names_are_rejected_with_a_suggestion(tmp_path: Path) -> None:
    presets = SpaceHost(tmp_path / "state").start()
    with pytest.raises(PresetValidationError, match="did you mean 'scene-object-tools'"):
        ToolPolicy.allow_list(presets, ["scene-object-tool"])


async def test_the_call_budget_refuses_calls_once_used_up(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    async with serve(max_calls=2) as (client, policy):
        for _ in range(2):
            ok = await client.call_tool("space_app_set_theme", {"theme": "dark"})
            assert not ok.is_error, text(ok)
        refused = await client.call_tool("space_app_set_theme", {"theme": "light"})
        assert refused.is_error
        assert "call budget of this server (2 tool calls) is used up" in text(refused)
        assert policy.calls == 2
    assert [e.get("gate") for e in events(tmp_path)] == [None, None, "budget"]


async def test_a_per_tool_budget_leaves_other_tools_open(serve: Callable[..., Any]) -> None:
    async with serve(max_calls_per_tool=1) as (client, _):
        assert not (await client.call_tool("space_app_set_theme", {"theme": "dark"})).is_error
        again = await client.call_tool("space_app_set_theme", {"theme": "dark"})
        assert again.is_error and "used its budget of 1 calls" in text(again)
        other = await client.call_tool("space_app_set_canvas_visible", {"visible": True})
        assert not other.is_error, text(other)


async def test_the_event_log_has_one_line_per_call_with_preset_outcome_and_latency(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    async with serve() as (client, _):
        await client.call_tool("space_app_set_theme", {"theme": "dark"})
        await client.call_tool("space_app_set_theme", {"theme": "purple"})
        await client.call_tool("space_drawing_undo", {})
    ok, bad, inactive = events(tmp_path)
    assert ok["kind"] == "call" and ok["v"] == 1
    assert ok["tool"] == "space_app_set_theme" and ok["ok"] is True
    assert ok["preset"] == "general-theme-tools"
    assert ok["latency_ms"] >= 0 and ok["ts"] > 0
    # Argument names, JSON types and lengths reach the log; their values do not.
    assert ok["args"] == {"theme": {"type": "string", "len": 4}}
    # The error's class and the argument at fault; never the message, which quotes the value.
    assert bad["ok"] is False and bad["error"] == "ToolArgumentError" and bad["arg"] == "theme"
    assert "purple" not in json.dumps(bad)
    assert inactive["kind"] == "refusal" and inactive["gate"] == "preset"
    assert inactive["tool"] == "space_drawing_undo"


async def test_an_unknown_tool_name_reaches_the_event_log_as_a_length_and_a_hash(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    # A name no plugin provides is the agent's own text, whichever gate refuses it.
    import hashlib

    secret = "space_the_password_is_hunter2"
    async with serve() as (client, _):
        assert (await client.call_tool(secret, {})).is_error
    async with serve(allow=["general-theme-tools"]) as (client, _):
        assert (await client.call_tool(secret, {})).is_error
        assert (await client.call_tool("space_drawing_undo", {})).is_error  # known: named
    digest = hashlib.sha256(secret.encode()).hexdigest()[:12]
    *unknown, known = events(tmp_path)
    assert [(e["gate"], e["tool"], e["tool_len"], e["tool_sha256"]) for e in unknown] == [
        ("preset", None, len(secret), digest),
        ("allow-list", None, len(secret), digest),
    ]
    assert (known["tool"], known["tool_len"], known["tool_sha256"]) == (
        "space_drawing_undo",
        None,
        None,
    )
    assert "hunter2" not in (tmp_path / "events.jsonl").read_text()


async def test_argument_names_the_schema_does_not_declare_reach_the_log_hashed(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    import hashlib

    async with serve() as (client, _):
        made_up = {"theme": "dark", "the password is hunter2": 1}
        assert (await client.call_tool("space_app_set_theme", made_up)).is_error
    (line,) = events(tmp_path)
    hashed = "sha256:" + hashlib.sha256(b"the password is hunter2").hexdigest()[:12]
    assert line["args"] == {
        "theme": {"type": "string", "len": 4},
        hashed: {"type": "integer", "len": None},
    }
    assert "hunter2" not in (tmp_path / "events.jsonl").read_text()


async def test_a_secret_given_as_an_argument_never_reaches_the_event_log(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    secret = "sk-live-9d8c7b6a5f4e3d2c1b0a"
    async with serve(max_calls=3) as (client, _):
        for arguments in ({"theme": secret}, {"theme": "dark", "api_key": secret}):
            result = await client.call_tool("space_app_set_theme", arguments)
            assert result.is_error
        await client.call_tool("space_app_set_theme", {"theme": "dark"})
        refused = await client.call_tool("space_app_set_theme", {"theme": secret})
        assert refused.is_error and "budget" in text(refused)
    data = (tmp_path / "events.jsonl").read_bytes()
    assert secret.encode() not in data and b"sk-live" not in data
    assert [e["kind"] for e in events(tmp_path)] == ["call", "call", "call", "refusal"]


async def test_the_event_log_is_append_only_across_servers(
    serve: Callable[..., Any], tmp_path: Path
) -> None:
    for theme in ("dark", "light"):
        async with serve() as (client, _):
            await client.call_tool("space_app_set_theme", {"theme": theme})
    assert len(events(tmp_path)) == 2


async def test_the_status_resource_reports_the_policy(serve: Callable[..., Any]) -> None:
    async with serve(allow=["general-theme-tools"], max_calls=5) as (client, _):
        await client.call_tool("space_app_set_theme", {"theme": "dark"})
        status = json.loads((await client.read_resource(STATUS_URI)).contents[0].text)
        assert status["tools"] == ["space_app_set_theme"]
        assert status["policy"]["allow"] == ["general-theme-tools"]
        assert status["policy"]["calls"] == 1 and status["policy"]["max_calls"] == 5


async def test_serve_keeps_an_event_log_in_the_state_dir_by_default(
    stdio_server_params: Callable[..., Any], tmp_path: Path
) -> None:
    async with Client(stdio_server_params(), mode="legacy") as client:
        await client.call_tool("space_app_set_theme", {"theme": "dark"})
    log = (tmp_path / "state" / "events.jsonl").read_text()
    [event] = [json.loads(line) for line in log.splitlines()]
    assert event["tool"] == "space_app_set_theme" and event["ok"] is True


async def test_serve_allow_flag_narrows_the_list(
    stdio_server_params: Callable[..., Any],
) -> None:
    params = stdio_server_params("--allow", "general-theme-tools", "--no-event-log")
    async with Client(params, mode="legacy") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["space_app_set_theme"]


def test_serve_rejects_bad_flags_before_touching_saved_state(tmp_path: Path) -> None:
    import subprocess

    from .conftest import serve_command, server_env

    state = tmp_path / "state"
    for flags, expected in (
        (["--allow", "scene-object-tool"], "did you mean 'scene-object-tools'"),
        (["--surface", "moon"], "declared values: scene, canvas"),
        (["--event-log", "x.jsonl", "--no-event-log"], "contradict"),
    ):
        proc = subprocess.run(
            serve_command("--state-dir", str(state), *flags),
            capture_output=True, text=True, env=server_env(), stdin=subprocess.DEVNULL,
            timeout=60,
        )  # fmt: skip
        assert proc.returncode == 2, (flags, proc.stderr)
        assert expected in proc.stderr and "Traceback" not in proc.stderr
    assert not (state / "shell.json").exists()


async def test_the_allow_list_narrows_the_prompt_and_status_to_the_presets_it_shows(
    serve: Callable[..., Any],
) -> None:
    # On the scene the shell-free defaults include app, scene-object and scene-state
    # presets; an allow-list of one preset hides the others' guidance and names.
    async with serve() as (client, _):
        everything = (await client.get_prompt("active-presets")).messages[0].content.text
        assert "## scene-object-tools" in everything and everything.count("## ") > 1
    async with serve(allow=["scene-object-tools"]) as (client, _):
        prompt = (await client.get_prompt("active-presets")).messages[0].content.text
        assert [line for line in prompt.splitlines() if line.startswith("## ")] == [
            "## scene-object-tools"
        ]
        [listed] = (await client.list_prompts()).prompts
        assert "scene-object-tools" in (listed.description or "")
        assert "," not in (listed.description or "")  # one preset named, no others
        assert (await client.read_resource(PROMPT_URI)).contents[0].text == prompt
        status = json.loads((await client.read_resource(STATUS_URI)).contents[0].text)
        assert [p["name"] for p in status["active_presets"]] == ["scene-object-tools"]
