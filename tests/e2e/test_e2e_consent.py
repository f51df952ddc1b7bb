"""Consent that means what the person thinks, end to end ("Trust, second round").

A real `presets serve --confirm risky`, a real MCP client, and `presets requests|approve`
as separate processes. Each test is one way an approval could mean something else:
the agent's own client saying yes, a call shown clipped, a gate closed during the
wait, an agent's words steering the person's terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from e2e.conftest import serve_command, server_env
from e2e.test_e2e_confirm import WRITE, WRITE_TOOL, calls_of, decisions
from e2e.test_e2e_control import ASK, cli, cli_json, events, server
from e2e.test_e2e_stdio import text
from mcp import Client

pytestmark = pytest.mark.anyio

SHELL = "general-shell-tools"
SHELL_TOOL = "space_app_run_bash"
DESTRUCTIVE = "drawing-layer-destructive-tools"
PADDED = "echo tidy-up-temp-files" + " " * 30 + "; echo HIDDEN-PART-RAN > hidden.txt"
ATTACK = (
    "x\x1b[999D\x1b[2K r1 override general-theme-tools on \x1b]0;owned\x07 "
    "[link=https://evil.example/]docs[/link]\nr9  call  forged-line"
)


async def waiting_calls(state: Path, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The `call` requests that wait, once ``count`` of them are listed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        calls = [r for r in await cli_json(state, "requests") if r["kind"] == "call"]
        if len(calls) >= count:
            assert len(calls) == count, calls
            return calls
        await anyio.sleep(0.2)
    raise AssertionError(f"{count} call requests were not filed")


def on_a_terminal(state: Path, *args: str) -> bytes:
    """What ``presets ARGS`` writes to a terminal (a pseudo-terminal, 400 columns wide)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
    command = [*serve_command()[:-1], *args, "--state-dir", str(state)]
    env = {**server_env(), "COLUMNS": "400", "LINES": "50", "TERM": "xterm-256color"}
    try:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env
        )
    finally:
        os.close(slave)
    out = b""
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        proc.wait(timeout=120)
    assert proc.returncode == 0, out
    return out


async def test_by_default_the_agents_own_client_cannot_approve_its_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    command = server(state, "--on", WRITE, "--confirm", "risky")
    async with Client(command, mode="legacy", elicitation_callback=accept) as client:
        results: list[Any] = []

        async def write() -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "self.txt", "content": "x"}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            [request] = await waiting_calls(state, 1)
            await anyio.sleep(1)  # time for an elicitation, were one sent
            assert not (state / "files" / "self.txt").exists()  # the client's yes ran nothing
            done = await cli(state, "approve", request["id"])
            assert done.returncode == 0, done.stderr
        assert not results[0].is_error, text(results[0])
    assert asked == []
    assert decisions(state) == [("approved", "cli")]


async def test_the_person_reads_the_whole_call_and_approves_that_call_only(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    command = server(state, "--on", SHELL, "--confirm", "risky")
    async with Client(command, mode="legacy") as client:
        results: list[Any] = []

        async def run() -> None:
            results.append(
                await client.call_tool(SHELL_TOOL, {"command": PADDED}, read_timeout_seconds=120)
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            [request] = await waiting_calls(state, 1)
            rid, digest = request["id"], request["digest"]
            assert request["arguments"] == {"command": PADDED}  # --json: in full
            listing = (await cli(state, "requests")).stdout
            assert "HIDDEN" not in listing  # clipped, and it says so and how to see all
            assert f"clipped: the arguments of {rid} are longer than shown" in listing
            assert "presets requests --full" in listing and f"sha256:{digest[:16]}" in listing
            full = (await cli(state, "requests", "--full")).stdout
            assert f"command = '{PADDED}'" in full
            assert f"sha256:{digest}" in full and f"presets approve {rid} --digest {digest}" in full

            wrong = await cli(state, "approve", rid, "--digest", "0" * 16)
            assert wrong.returncode == 1 and "is not the call you checked" in wrong.stderr
            assert "Traceback" not in wrong.stderr
            short = await cli(state, "approve", rid, "--digest", digest[:8])
            assert short.returncode == 1 and "at least 16 hex digits" in short.stderr
            assert [r["id"] for r in await waiting_calls(state, 1)] == [rid]  # still waits

            done = await cli(state, "approve", rid, "--digest", digest[:16])
            assert done.returncode == 0, done.stderr
            assert f"sha256:{digest}" in done.stdout
        assert not results[0].is_error, text(results[0])
    # What ran is what the person read in full.
    assert (state / "files" / "hidden.txt").read_text().strip() == "HIDDEN-PART-RAN"
    assert len(calls_of(state, SHELL_TOOL)) == 1


async def test_approving_one_of_two_waiting_calls_leaves_the_other_waiting(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    files = state / "files"
    async with Client(server(state, "--on", WRITE, "--confirm", "risky"), mode="legacy") as client:
        results: dict[str, Any] = {}

        async def write(path: str) -> None:
            results[path] = await client.call_tool(
                WRITE_TOOL, {"path": path, "content": path}, read_timeout_seconds=120
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "a.txt")
            tg.start_soon(write, "b.txt")
            calls = await waiting_calls(state, 2)
            by_path = {r["arguments"]["path"]: r for r in calls}
            a, b = by_path["a.txt"], by_path["b.txt"]
            assert a["digest"] != b["digest"]
            # a's digest does not approve b.
            crossed = await cli(state, "approve", b["id"], "--digest", a["digest"])
            assert crossed.returncode == 1 and "is not the call you checked" in crossed.stderr
            done = await cli(state, "approve", a["id"], "--digest", a["digest"])
            assert done.returncode == 0, done.stderr
            with anyio.fail_after(60):
                while "a.txt" not in results:
                    await anyio.sleep(0.1)
            assert (files / "a.txt").read_text() == "a.txt"
            assert [r["id"] for r in await waiting_calls(state, 1)] == [b["id"]]
            assert not (files / "b.txt").exists() and "b.txt" not in results
            done = await cli(state, "deny", b["id"])
            assert done.returncode == 0, done.stderr
        assert not results["a.txt"].is_error and results["b.txt"].is_error
    assert not (files / "b.txt").exists()
    assert len(calls_of(state, WRITE_TOOL)) == 1


async def test_a_call_approved_after_its_preset_was_turned_off_does_not_run(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    async with Client(server(state, "--on", WRITE, "--confirm", "risky"), mode="legacy") as client:
        results: list[Any] = []

        async def write() -> None:
            results.append(
                await client.call_tool(
                    WRITE_TOOL, {"path": "stale.txt", "content": "x"}, read_timeout_seconds=120
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            [request] = await waiting_calls(state, 1)
            off = await cli(state, "off", WRITE)
            assert off.returncode == 0, off.stderr
            done = await cli(state, "approve", request["id"])
            assert done.returncode == 0, done.stderr
        refused = results[0]
        assert refused.is_error
        message = text(refused)
        assert f"the user approved request {request['id']}, but while it waited" in message
        assert WRITE in message and "off" in message
    assert not (state / "files" / "stale.txt").exists()
    assert calls_of(state, WRITE_TOOL) == []
    refusals = [(e["tool"], e["gate"]) for e in events(state) if e["kind"] == "refusal"]
    assert refusals == [(WRITE_TOOL, "preset")]


async def test_a_budget_is_checked_when_the_approved_call_may_run(tmp_path: Path) -> None:
    state = tmp_path / "state"
    command = server(state, "--on", WRITE, "--confirm", "risky", "--max-calls-per-tool", "1")
    async with Client(command, mode="legacy") as client:
        results: dict[str, Any] = {}

        async def write(path: str) -> None:
            results[path] = await client.call_tool(
                WRITE_TOOL, {"path": path, "content": "x"}, read_timeout_seconds=120
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write, "one.txt")
            tg.start_soon(write, "two.txt")
            calls = await waiting_calls(state, 2)  # waiting spends no budget
            for request in calls:
                done = await cli(state, "approve", request["id"])
                assert done.returncode == 0, done.stderr
    outcomes = sorted((r.is_error, text(r)) for r in results.values())
    assert [is_error for is_error, _ in outcomes] == [False, True]
    assert "has used its budget of 1 calls" in outcomes[1][1]
    assert len([p for p in (state / "files").iterdir()]) == 1
    assert len(calls_of(state, WRITE_TOOL)) == 1


async def test_an_agents_reason_cannot_steer_the_persons_terminal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with Client(server(state, "--on", WRITE, "--confirm", "risky"), mode="legacy") as client:
        asked = await client.call_tool(
            ASK, {"preset": DESTRUCTIVE, "state": "on", "reason": ATTACK}
        )
        assert not asked.is_error, text(asked)
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                await client.call_tool(
                    WRITE_TOOL, {"path": "real.txt", "content": "x"}, read_timeout_seconds=120
                )

            tg.start_soon(write)
            [call] = await waiting_calls(state, 1)

            data = await cli_json(state, "requests")
            [override] = [r for r in data if r["kind"] == "override"]
            assert override["reason"] == ATTACK  # the data, exact; JSON escapes it
            raw = (await cli(state, "requests", "--json")).stdout
            assert "\x1b" not in raw and "\x07" not in raw

            shown = "x\\x1b[999D\\x1b[2K r1 override general-theme-tools on \\x1b]0;owned\\x07"
            link = "[link=https://evil.example/]docs[/link]\\nr9  call  forged-line"
            for args in (("requests",), ("requests", "--full")):
                piped = (await cli(state, *args)).stdout
                assert "\x1b" not in piped and "\x07" not in piped, piped
                assert shown in piped and link in piped
                assert not any(line.startswith("r9") for line in piped.splitlines())
                if args == ("requests",):  # a header and one row per request, nothing forged
                    assert len(piped.splitlines()) == 3, piped
                    assert call["id"] in piped

                tty = await anyio.to_thread.run_sync(lambda a=args: on_a_terminal(state, *a))
                for control in (b"\x1b[999D", b"\x1b[2K", b"\x1b]", b"\x07"):
                    assert control not in tty, (control, tty)
                screen = tty.decode()
                assert shown in screen and "[link=https://evil.example/]docs[/link]" in screen
                assert call["id"] in screen and WRITE_TOOL in screen

            done = await cli(state, "deny", call["id"])
            assert done.returncode == 0, done.stderr
