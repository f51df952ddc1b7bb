"""``presets serve --store redis://...``: replicas that share requests, budgets and the log.

Real servers (stdio), a real MCP client, a real ``redis-server``, and the
operator's commands run with ``--store`` against the store, not a server.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e.redisserver import RedisServer
from e2e.test_e2e_confirm import READ, READ_TOOL, WRITE, WRITE_TOOL
from e2e.test_e2e_control import presets, server
from e2e.test_e2e_stdio import text
from mcp import Client

from agent_presets.server.store.redis import RedisStore
from agent_presets.server.store.redislog import read_stream, verify_stream

pytestmark = pytest.mark.anyio


async def store_cli(state: Path, url: str, *args: str) -> Any:
    return await anyio.to_thread.run_sync(lambda: presets(state, *args, "--store", url))


async def waiting_call(state: Path, url: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = await store_cli(state, url, "requests", "--json")
        assert done.returncode == 0, done.stderr
        calls = [r for r in json.loads(done.stdout) if r["kind"] == "call"]
        if calls:
            return calls[0]
        await anyio.sleep(0.2)
    raise AssertionError("no call request reached the store")


async def test_a_call_waiting_on_one_replica_runs_once_when_approved_through_the_store(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    replicas = [
        server(tmp_path / f"state{n}", "--store", url, "--confirm", "risky", "--on", WRITE,
               "--on", READ)
        for n in (1, 2)
    ]  # fmt: skip
    async with (
        Client(replicas[0], mode="legacy") as one,
        Client(replicas[1], mode="legacy") as two,
    ):
        results: dict[str, Any] = {}

        async def write() -> None:
            results["call"] = await two.call_tool(
                WRITE_TOOL, {"path": "approved.txt", "content": "hi"}, read_timeout_seconds=120
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            request = await waiting_call(tmp_path, url)
            assert request["tool"] == WRITE_TOOL and request["arguments"]["path"] == "approved.txt"
            done = await store_cli(tmp_path, url, "approve", request["id"], "--digest",
                                   request["digest"])  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert f"approved {request['id']}" in done.stdout
        assert not results["call"].is_error, text(results["call"])
        assert (tmp_path / "state2" / "files" / "approved.txt").read_text() == "hi"
        assert not (tmp_path / "state1" / "files" / "approved.txt").exists()
        again = await store_cli(tmp_path, url, "approve", request["id"])
        assert again.returncode == 1 and "no pending request" in again.stderr
        # The other replica reads the file its own way (it is its own state), and the
        # read-only call costs no request.
        read = await one.call_tool(READ_TOOL, {"path": "missing.txt"}, read_timeout_seconds=60)
        assert read.is_error

    store = RedisStore(url)
    lines = list(read_stream(store))
    writes = [e for e in lines if e["kind"] == "call" and e["tool"] == WRITE_TOOL]
    assert len(writes) == 1 and writes[0]["ok"] is True  # ran once
    assert [(e["outcome"], e["by"]) for e in lines if e["kind"] == "decision"] == [
        ("approved", "cli")
    ]
    assert verify_stream(store).broken is None
    store.close()


async def test_a_denied_call_through_the_store_does_not_run(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    url = redis_server.url
    command = server(tmp_path / "state", "--store", url, "--confirm", "risky", "--on", WRITE)
    async with Client(command, mode="legacy") as client:
        results: dict[str, Any] = {}

        async def write() -> None:
            results["call"] = await client.call_tool(
                WRITE_TOOL, {"path": "no.txt", "content": "x"}, read_timeout_seconds=120
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            request = await waiting_call(tmp_path, url)
            done = await store_cli(tmp_path, url, "deny", request["id"])
            assert done.returncode == 0, done.stderr
        assert results["call"].is_error and "refused to run" in text(results["call"])
    assert not (tmp_path / "state" / "files" / "no.txt").exists()
