"""Confirmation before risky calls end to end: a real `presets serve --confirm`, a real MCP
client, and `presets requests|approve|deny` as separate processes.

Every wait is for an event (a request listed, a call's answer), bounded generously: the
machine is shared.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from e2e.conftest import serve_command, server_env
from e2e.test_e2e_control import cli, cli_json, events, server
from e2e.test_e2e_stdio import text
from mcp import Client

pytestmark = pytest.mark.anyio

WRITE = "general-file-write-tools"
WRITE_TOOL = "space_app_write_file"
READ = "general-file-read-tools"
READ_TOOL = "space_app_read_file"
THEME_TOOL = "space_app_set_theme"


def confirming(state: Path, *extra: str) -> Any:
    return server(state, "--on", WRITE, "--on", READ, *extra)


async def pending_call(state: Path, timeout: float = 60.0) -> dict[str, Any]:
    """The one `call` request that waits, once it is listed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        calls = [r for r in await cli_json(state, "requests") if r["kind"] == "call"]
        if calls:
            assert len(calls) == 1, calls
            return calls[0]
        await anyio.sleep(0.2)
    raise AssertionError("no call request was filed")


def calls_of(state: Path, tool: str) -> list[dict[str, Any]]:
    return [e for e in events(state) if e["kind"] == "call" and e["tool"] == tool]


def decisions(state: Path) -> list[tuple[str, str]]:
    return [(e["outcome"], e["by"]) for e in events(state) if e["kind"] == "decision"]


async def test_a_risky_call_waits_and_runs_once_when_approved_and_not_when_denied(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    files = state / "files"
    async with Client(confirming(state, "--confirm", "risky"), mode="legacy") as client:
        results: dict[str, Any] = {}

        async def write(path: str) -> None:
            results[path] = await client.call_tool(
                WRITE_TOOL, {"path": path, "content": "hello"}, read_timeout_seconds=120
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "approved.txt")
            request = await pending_call(state)
            assert (request["tool"], request["preset"]) == (WRITE_TOOL, WRITE)
            assert "path='approved.txt'" in request["reason"]
            assert not (files / "approved.txt").exists()  # it waits
            done = await cli(state, "approve", request["id"])
            assert done.returncode == 0, done.stderr
        assert not results["approved.txt"].is_error, text(results["approved.txt"])
        assert (files / "approved.txt").read_text() == "hello"
        again = await cli(state, "approve", request["id"])
        assert again.returncode == 1 and "no pending request" in again.stderr

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "denied.txt")
            request = await pending_call(state)
            done = await cli(state, "deny", request["id"])
            assert done.returncode == 0, done.stderr
        refused = results["denied.txt"]
        assert refused.is_error and "refused to run" in text(refused)
        assert not (files / "denied.txt").exists()

        # Read-only and normal tools are never asked about.
        for tool, args in ((READ_TOOL, {"path": "approved.txt"}), (THEME_TOOL, {"theme": "dark"})):
            result = await client.call_tool(tool, args, read_timeout_seconds=60)
            assert not result.is_error, text(result)
        assert await cli_json(state, "requests") == []

    assert len(calls_of(state, WRITE_TOOL)) == 1  # ran once, for the one approval
    assert decisions(state) == [("approved", "cli"), ("denied", "cli")]
    refusals = [e for e in events(state) if e["kind"] == "refusal"]
    assert [(r["tool"], r["gate"]) for r in refusals] == [(WRITE_TOOL, "confirm")]


async def test_an_unconfirmed_call_times_out_refused_and_says_how_to_approve(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    command = confirming(state, "--confirm", "risky", "--confirm-timeout", "2")
    async with Client(command, mode="legacy") as client:
        started = time.monotonic()
        result = await client.call_tool(
            WRITE_TOOL, {"path": "late.txt", "content": "x"}, read_timeout_seconds=120
        )
        assert time.monotonic() - started >= 1.9
        assert result.is_error
        assert "within 2 seconds" in text(result) and "presets approve" in text(result)
        assert await cli_json(state, "requests") == []
    assert not (state / "files" / "late.txt").exists()
    assert decisions(state) == [("expired", "timeout")]
    assert calls_of(state, WRITE_TOOL) == []


async def test_a_client_with_elicitation_is_asked_and_its_answer_decides(tmp_path: Path) -> None:
    state = tmp_path / "state"
    asked: list[str] = []
    answers = ["accept", "decline"]

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=answers.pop(0), content={})

    command = confirming(state, "--confirm", "risky", "--confirm-via", "client")
    async with Client(command, mode="legacy", elicitation_callback=elicit) as client:
        accepted = await client.call_tool(
            WRITE_TOOL, {"path": "yes.txt", "content": "a" * 100}, read_timeout_seconds=120
        )
        assert not accepted.is_error, text(accepted)
        declined = await client.call_tool(
            WRITE_TOOL, {"path": "no.txt", "content": "b"}, read_timeout_seconds=120
        )
        assert declined.is_error and "refused to run" in text(declined)
    assert (state / "files" / "yes.txt").exists() and not (state / "files" / "no.txt").exists()
    assert len(asked) == 2
    message = asked[0]
    # Every argument in full, and the digest the approval binds to.
    for part in (WRITE_TOOL, WRITE, "filesystem-write", "path='yes.txt'", f"'{'a' * 100}'"):
        assert part in message, (part, message)
    assert "sha256:" in message
    assert decisions(state) == [("approved", "elicitation"), ("denied", "elicitation")]
    assert len(calls_of(state, WRITE_TOOL)) == 1


async def test_over_http_the_client_is_asked_on_the_calls_own_stream(tmp_path: Path) -> None:
    from e2e.conftest import HttpServer

    http = HttpServer(
        tmp_path / "state", "--on", WRITE, "--confirm", "risky", "--confirm-via", "client"
    )
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    try:
        async with Client(http.url, mode="legacy", elicitation_callback=accept) as client:
            result = await client.call_tool(
                WRITE_TOOL, {"path": "web.txt", "content": "x"}, read_timeout_seconds=120
            )
            assert not result.is_error, text(result)
    finally:
        http.stop()
    assert len(asked) == 1 and WRITE_TOOL in asked[0]
    assert (tmp_path / "state" / "files" / "web.txt").exists()
    assert decisions(tmp_path / "state") == [("approved", "elicitation")]


async def test_when_the_client_fails_to_elicit_the_call_waits_for_presets_approve(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"

    async def broken(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=types.INTERNAL_ERROR, message="no UI here")

    command = confirming(state, "--confirm", "risky", "--confirm-via", "client")
    async with Client(command, mode="legacy", elicitation_callback=broken) as client:
        results: list[Any] = []

        async def write() -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "later.txt", "content": "x"}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            request = await pending_call(state)
            await anyio.sleep(1)  # the failed elicitation has left it waiting
            done = await cli(state, "approve", request["id"])
            assert done.returncode == 0, done.stderr
        assert not results[0].is_error, text(results[0])
    assert (state / "files" / "later.txt").exists()
    assert decisions(state) == [("approved", "cli")]


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: 2026-07-28, after server/discover
async def test_a_client_without_elicitation_is_not_asked_and_its_call_waits_for_presets_approve(
    tmp_path: Path, mode: str
) -> None:
    state = tmp_path / "state"
    command = confirming(state, "--confirm", "risky", "--confirm-via", "client")
    async with Client(command, mode=mode) as client:  # type: ignore[arg-type]
        results: list[Any] = []

        async def write() -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "new.txt", "content": "x"}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            request = await pending_call(state)
            done = await cli(state, "approve", request["id"])
            assert done.returncode == 0, done.stderr
        assert not results[0].is_error, text(results[0])
    assert decisions(state) == [("approved", "cli")]


async def test_a_2026_client_is_asked_in_a_round_and_its_answer_decides(tmp_path: Path) -> None:
    state = tmp_path / "state"
    asked: list[str] = []
    answers = ["accept", "decline"]

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=answers.pop(0), content={})

    command = confirming(state, "--confirm", "risky", "--confirm-via", "client")
    async with Client(command, elicitation_callback=elicit) as client:  # mode auto: 2026-07-28
        assert client.protocol_version == "2026-07-28"
        accepted = await client.call_tool(WRITE_TOOL, {"path": "yes.txt", "content": "a"})
        assert not accepted.is_error, text(accepted)
        declined = await client.call_tool(WRITE_TOOL, {"path": "no.txt", "content": "b"})
        assert declined.is_error and "refused to run" in text(declined)
    assert (state / "files" / "yes.txt").exists() and not (state / "files" / "no.txt").exists()
    assert len(asked) == 2 and "path='yes.txt'" in asked[0] and "sha256:" in asked[0]
    assert decisions(state) == [("approved", "elicitation"), ("denied", "elicitation")]
    assert len(calls_of(state, WRITE_TOOL)) == 1


async def test_a_cancelled_call_is_withdrawn_and_a_later_approval_runs_nothing(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with Client(confirming(state, "--confirm", "risky"), mode="legacy") as client:
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                await client.call_tool(
                    WRITE_TOOL, {"path": "gone.txt", "content": "x"}, read_timeout_seconds=120
                )

            tg.start_soon(write)
            request = await pending_call(state)
            tg.cancel_scope.cancel()  # the client gives up: notifications/cancelled
        deadline = time.monotonic() + 60
        while await cli_json(state, "requests") and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        done = await cli(state, "approve", request["id"])
        assert done.returncode == 1 and "no pending request" in done.stderr
        # The server is still fine: a normal call runs.
        result = await client.call_tool(THEME_TOOL, {"theme": "dark"}, read_timeout_seconds=60)
        assert not result.is_error, text(result)
    assert not (state / "files" / "gone.txt").exists()
    assert decisions(state) == [("withdrawn", "client")]
    # One line for the call: cancelled while it waited, so it never ran.
    [line] = calls_of(state, WRITE_TOOL)
    assert (line["outcome"], line["confirm"], line["ok"]) == ("cancelled", "withdrawn", False)


async def test_confirm_destructive_does_not_ask_about_a_file_write(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with Client(confirming(state, "--confirm", "destructive"), mode="legacy") as client:
        with anyio.fail_after(60):
            result = await client.call_tool(WRITE_TOOL, {"path": "free.txt", "content": "x"})
        assert not result.is_error, text(result)
    assert (state / "files" / "free.txt").exists()
    assert [e for e in events(state) if e["kind"] in ("request", "decision")] == []


@pytest.mark.parametrize("flag", ["--confirm", "--confirm-via"])
def test_serve_refuses_an_unknown_confirm_mode(tmp_path: Path, flag: str) -> None:
    done = subprocess.run(
        serve_command("--state-dir", str(tmp_path), flag, "always"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    assert done.returncode == 2 and "'always' is not one of" in done.stderr


def test_the_argument_summary_names_each_argument_with_a_short_value() -> None:
    from agent_presets.server.mcp.confirm import summarize

    assert summarize({}) == "no arguments"
    assert summarize({"path": "a.txt", "n": 3, "tags": ["x"]}) == (
        "path='a.txt', n=3, tags=[\"x\"]"
    )
    long = summarize({"content": "y" * 500})
    assert long.startswith("content='yyy") and long.endswith("… (500 chars)")
    assert len(long) < 80
    many = summarize({f"a{i}": i for i in range(10)})
    assert many.endswith("a7=7, and 2 more")
