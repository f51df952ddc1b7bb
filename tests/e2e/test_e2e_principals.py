"""Two principals on one HTTP server: each is served its own context and overrides.

``presets serve --transport http --auth tokens`` with the tokens ``alice`` and
``bob``. What one principal's agent or operator changes reaches that
principal's list and notices only; the app's data stays shared.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import HttpServer
from .test_e2e_tokens import create, run

pytestmark = pytest.mark.anyio

READ_FILES = "general-file-read-tools"
READ_TOOL = "space_app_list_files"


@pytest.fixture
def two_principals(tmp_path: Path) -> Iterator[tuple[HttpServer, Path, dict[str, str]]]:
    state = tmp_path / "state"
    tokens = {name: create(state, name) for name in ("alice", "bob")}
    server = HttpServer(state, "--auth", "tokens")
    try:
        yield server, state, tokens
    finally:
        server.stop()


class Heard:
    """The tools/list_changed notices one client received."""

    def __init__(self) -> None:
        self.tools = 0

    async def __call__(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            self.tools += 1


@asynccontextmanager
async def client_as(url: str, token: str, heard: Heard | None = None) -> AsyncIterator[Client]:
    http_client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    async with (
        http_client,
        Client(
            streamable_http_client(url, http_client=http_client),
            mode="legacy",
            message_handler=heard,
        ) as client,
    ):
        yield client


async def names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


def cli(state: Path, *args: str) -> Any:
    done = run(*args, "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout


async def settle(seconds: float = 0.5) -> None:
    await anyio.sleep(seconds)  # notices that would come have come by now


async def test_an_agent_switches_only_its_own_principals_context(
    two_principals: tuple[HttpServer, Path, dict[str, str]],
    expected_tool_names: dict[str, list[str]],
) -> None:
    server, state, tokens = two_principals
    heard_alice, heard_bob = Heard(), Heard()
    async with (
        client_as(server.url, tokens["alice"], heard_alice) as alice,
        client_as(server.url, tokens["bob"], heard_bob) as bob,
    ):
        assert await names(alice) == await names(bob) == expected_tool_names["scene"]
        await alice.call_tool("space_app_switch_surface", {"surface": "canvas"})
        result = await alice.call_tool("space_app_set_activity", {"activity": "drawing"})
        assert not result.is_error, result
        await settle()
        assert await names(alice) == expected_tool_names["drawing"]
        assert await names(bob) == expected_tool_names["scene"]
        assert heard_alice.tools >= 1
        assert heard_bob.tools == 0, "bob heard of a change to alice's list"

        # The host's context is untouched; alice's own is kept and shown.
        everyone = cli(state, "status", "--json")
        assert everyone["context"]["surface"] == "scene"
        assert everyone["principals"] == ["alice", "local"]
        theirs = cli(state, "status", "--principal", "alice", "--json")
        assert theirs["context"]["surface"] == "canvas"
        assert theirs["context"]["activity"] == "drawing"

        # The operator moves bob; alice hears nothing of it.
        before = heard_alice.tools
        cli(state, "context", "set", "surface=canvas", "activity=drawing", "--principal", "bob")
        await settle()
        assert await names(bob) == expected_tool_names["drawing"]
        assert heard_bob.tools >= 1
        assert heard_alice.tools == before


async def test_status_and_the_active_prompt_are_each_principals_own(
    two_principals: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, _state, tokens = two_principals
    drawing, scene = "The user is editing a vector drawing", "The user is building a 3D scene"

    async def seen(client: Client) -> tuple[dict[str, Any], str, str]:
        status = await client.read_resource("presets://active/status")
        prompt = await client.read_resource("presets://active/prompt")
        got = await client.get_prompt("active-presets")
        message = got.messages[0].content
        return (
            json.loads(status.contents[0].text),  # type: ignore[union-attr]
            prompt.contents[0].text,  # type: ignore[union-attr]
            getattr(message, "text", ""),
        )

    async with (
        client_as(server.url, tokens["alice"]) as alice,
        client_as(server.url, tokens["bob"]) as bob,
    ):
        await alice.call_tool("space_app_switch_surface", {"surface": "canvas"})
        result = await alice.call_tool("space_app_set_activity", {"activity": "drawing"})
        assert not result.is_error, result
        status, resource, prompt = await seen(alice)
        assert status["context"]["surface"] == "canvas"
        assert status["context"]["activity"] == "drawing"
        active = {a["name"] for a in status["active_presets"]}
        assert "drawing-shape-tools" in active and "scene-object-tools" not in active
        assert "space_drawing_insert_shape" in status["tools"]
        assert "space_scene_add_cuboid" not in status["tools"]
        assert status["tools"] == [t for t in await names(alice) if t in status["tools"]]
        for text in (resource, prompt):
            assert drawing in text and scene not in text
        status, resource, prompt = await seen(bob)
        assert status["context"]["surface"] == "scene"
        assert "scene-object-tools" in {a["name"] for a in status["active_presets"]}
        assert "space_drawing_insert_shape" not in status["tools"]
        for text in (resource, prompt):
            assert scene in text and drawing not in text


async def test_an_approved_request_applies_to_the_principal_that_asked(
    two_principals: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = two_principals
    async with (
        client_as(server.url, tokens["alice"]) as alice,
        client_as(server.url, tokens["bob"]) as bob,
    ):
        asked = await alice.call_tool(
            "space_presets_request",
            {"preset": READ_FILES, "state": "on", "reason": "read the notes"},
        )
        request_id = asked.structured_content["request"]
        listed = cli(state, "requests", "--json")
        assert [(r["id"], r["principal"]) for r in listed] == [(request_id, "alice")]
        assert cli(state, "requests", "--principal", "bob", "--json") == []
        cli(state, "approve", request_id)
        await settle()
        assert READ_TOOL in await names(alice)
        assert READ_TOOL not in await names(bob)
        called = await bob.call_tool(READ_TOOL, {"path": "."})
        assert called.is_error and READ_FILES in "".join(
            getattr(c, "text", "") for c in called.content
        )


async def test_a_server_wide_override_reaches_every_principal_and_one_principals_wins(
    two_principals: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = two_principals
    async with (
        client_as(server.url, tokens["alice"]) as alice,
        client_as(server.url, tokens["bob"]) as bob,
    ):
        cli(state, "on", READ_FILES)
        await settle()
        assert READ_TOOL in await names(alice)
        assert READ_TOOL in await names(bob)
        cli(state, "off", READ_FILES, "--principal", "bob")
        await settle()
        assert READ_TOOL in await names(alice)
        assert READ_TOOL not in await names(bob)
        bob_status = cli(state, "status", "--principal", "bob", "--json")
        states = {p["name"]: p["state"] for p in bob_status["presets"]}
        assert states[READ_FILES] == "off"
        cli(state, "auto", READ_FILES, "--principal", "bob")
        await settle()
        assert READ_TOOL in await names(bob)  # the server's override applies again


def test_a_principal_no_token_could_have_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = HttpServer(state)
    try:
        done = run("on", READ_FILES, "--principal", "not a name", "--state-dir", str(state))
        assert done.returncode == 1, done.stdout
        assert "not a token name" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        server.stop()


async def test_a_call_waiting_for_confirmation_names_the_principal_that_made_it(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    alice_token = create(state, "alice")
    server = HttpServer(state, "--auth", "tokens", "--confirm", "destructive")
    try:
        cli(state, "on", "general-world-tools", "--yes")
        async with client_as(server.url, alice_token) as alice:
            async with anyio.create_task_group() as tg:
                answers: list[Any] = []

                async def delete() -> None:
                    answers.append(await alice.call_tool("space_app_delete_world", {"name": "x"}))

                tg.start_soon(delete)
                with anyio.fail_after(30):
                    while not (waiting := cli(state, "requests", "--json")):
                        await anyio.sleep(0.1)
                assert [(r["kind"], r["principal"]) for r in waiting] == [("call", "alice")]
                assert cli(state, "requests", "--principal", "bob", "--json") == []
                cli(state, "deny", waiting[0]["id"])
            assert answers[0].is_error  # denied: it never ran
    finally:
        server.stop()


async def test_presets_budget_counts_what_one_principal_is_served(
    two_principals: tuple[HttpServer, Path, dict[str, str]],
    expected_tool_names: dict[str, list[str]],
) -> None:
    server, state, tokens = two_principals
    async with client_as(server.url, tokens["alice"]) as alice:
        await alice.call_tool("space_app_switch_surface", {"surface": "canvas"})
        await alice.call_tool("space_app_set_activity", {"activity": "drawing"})
        alices = cli(state, "budget", "--principal", "alice", "--json")
        bobs = cli(state, "budget", "--principal", "bob", "--json")
    assert alices["context"]["activity"] == "drawing"
    assert [t["name"] for t in alices["active"]["tools"]] == expected_tool_names["drawing"]
    assert [t["name"] for t in bobs["active"]["tools"]] == expected_tool_names["scene"]
    assert alices["active"]["tokens"] != bobs["active"]["tokens"]


async def test_a_tool_budget_holds_for_each_principals_own_list(tmp_path: Path) -> None:
    from agent_presets.lib.budget import Budget, get_tokenizer

    state = tmp_path / "state"
    tokens = {name: create(state, name) for name in ("alice", "bob")}
    server = HttpServer(state, "--auth", "tokens", "--tool-budget", "5000")
    budget = Budget(get_tokenizer())  # the SDK's client is none the server knows: the default

    async def listed(client: Client) -> tuple[set[str], int]:
        tools = (await client.list_tools()).tools
        entries = [t.model_dump(by_alias=True, exclude_none=True) for t in tools]
        return {t.name for t in tools}, sum(budget.entry(e) for e in entries)

    try:
        async with (
            client_as(server.url, tokens["alice"]) as alice,
            client_as(server.url, tokens["bob"]) as bob,
        ):
            await alice.call_tool("space_app_switch_surface", {"surface": "canvas"})
            await alice.call_tool("space_app_set_activity", {"activity": "drawing"})
            alices, alice_cost = await listed(alice)
            bobs, bob_cost = await listed(bob)
            assert alice_cost <= 5000 and bob_cost <= 5000
            assert any(n.startswith("space_drawing_") for n in alices)
            assert not any(n.startswith("space_drawing_") for n in bobs)
            # What the budget left out of alice's list is hers to reach through presets_call.
            drawn = await alice.call_tool(
                "space_presets_call",
                {"name": "space_drawing_inspect", "arguments": {}},
            )
            assert not drawn.is_error
    finally:
        server.stop()


async def test_presets_budget_counts_only_what_a_principals_allow_list_serves(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    token = create(state, "carol", "--allow", "general-canvas-tools")
    server = HttpServer(state, "--auth", "tokens")
    try:
        async with client_as(server.url, token) as carol:
            served = sorted(t.name for t in (await carol.list_tools()).tools)
        counted = cli(state, "budget", "--principal", "carol", "--json")
        text = cli(state, "budget", "--principal", "carol")
    finally:
        server.stop()
    assert len(served) == 3
    assert [t["name"] for t in counted["active"]["tools"]] == served
    assert counted["active"]["count"] == 3
    assert sum(t["tokens"] for t in counted["active"]["tools"]) == counted["active"]["tokens"]
    # The per-preset figures are the principal's too: only the presets it may use.
    assert [p["name"] for p in counted["presets"]] == ["general-canvas-tools"]
    assert counted["server_tools"] == []
    assert "for the 3 tools tools/list sends" in text.splitlines()[-1]
