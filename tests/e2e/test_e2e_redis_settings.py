"""What the Redis store needs of Redis: a policy that keeps every key, and memory to write.

A Redis that evicts keys under memory pressure (``allkeys-*``, ``volatile-*``)
would drop the token table, the budget counters and the principals' state, so
every command that opens the store refuses it at start and names the policy
it needs. A Redis at ``maxmemory`` with ``noeviction`` refuses writes: a call
then fails with the store's own error, as when Redis is down, never with an
internal error or a traceback (docs/store.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_presets.server.store import StoreUnavailableError
from agent_presets.server.store.redis import RedisStore

from .conftest import HttpServer
from .redisserver import RedisServer
from .replicas import presets

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl"])
def test_an_evicting_redis_is_refused_at_start_naming_the_policy_it_needs(
    redis_server: RedisServer, tmp_path: Path, policy: str
) -> None:
    redis.Redis.from_url(redis_server.url).config_set("maxmemory-policy", policy)
    for command in (
        ["tokens", "list", "--store", redis_server.url],
        ["serve", "--store", redis_server.url, "--state-dir", str(tmp_path / "state")],
    ):
        done = presets(*command, timeout=60)
        assert done.returncode == 1, done
        assert f"maxmemory-policy {policy}" in done.stderr
        assert "Set maxmemory-policy noeviction" in done.stderr
        assert "Traceback" not in done.stderr
    redis.Redis.from_url(redis_server.url).config_set("maxmemory-policy", "noeviction")
    assert presets("tokens", "list", "--store", redis_server.url).returncode == 0


def test_a_budget_charge_on_a_full_redis_is_the_store_error(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url)
    assert store.charge([("calls", 10)]) is None
    redis.Redis.from_url(redis_server.url).config_set("maxmemory", 1)
    for operation in (
        lambda: store.charge([("calls", 10)]),
        lambda: store.save_principal("alice", None),
    ):
        with pytest.raises(StoreUnavailableError, match="is full") as caught:
            operation()
        assert redis_server.url in str(caught.value) and "nothing was changed" in str(caught.value)
    store.close()


async def test_calls_on_a_full_redis_fail_with_the_store_error_not_a_traceback(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    server = HttpServer(tmp_path / "state", "--store", redis_server.url)
    try:
        async with Client(streamable_http_client(server.url), mode="legacy") as client:
            assert not (await client.call_tool("space_app_set_theme", {"theme": "dark"})).is_error
            redis.Redis.from_url(redis_server.url).config_set("maxmemory", 1)
            asked = await client.call_tool(
                "space_presets_request",
                {"preset": "general-file-read-tools", "state": "on", "reason": "notes"},
            )
            assert asked.is_error and "is full" in text(asked), text(asked)
            redis.Redis.from_url(redis_server.url).config_set("maxmemory", 0)
            again = await client.call_tool(
                "space_presets_request",
                {"preset": "general-file-read-tools", "state": "on", "reason": "notes"},
            )
            assert not again.is_error, text(again)
    finally:
        server.stop()
    assert "Traceback" not in "".join(server.stderr)


async def test_a_budgeted_call_on_a_frozen_redis_fails_after_one_timeout_not_two(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """docs/store.md: 2 s. The token table's periodic read no longer waits in front of it."""
    import os
    import signal
    import time

    import anyio
    import httpx2

    made = presets("tokens", "create", "alice", "--store", redis_server.url)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    server = HttpServer(
        tmp_path / "state", "--store", redis_server.url, "--max-calls", "100", "--auth", "tokens"
    )
    assert redis_server.process is not None
    pid = redis_server.process.pid
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    try:
        async with (
            http,
            Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client,
        ):
            assert not (await client.call_tool("space_app_set_theme", {"theme": "dark"})).is_error
            os.kill(pid, signal.SIGSTOP)  # frozen: connections open, no answer
            waited = []
            for _ in range(3):
                await anyio.sleep(0.6)  # past the token table's periodic look (0.5 s)
                started = time.monotonic()
                result = await client.call_tool("space_app_set_theme", {"theme": "dark"})
                waited.append(time.monotonic() - started)
                assert result.is_error and "is unavailable" in text(result), text(result)
            os.kill(pid, signal.SIGCONT)
            assert max(waited) < 3.5, waited  # one 2 s timeout (and a loaded machine), not 4 s
            back = await client.call_tool("space_app_set_theme", {"theme": "light"})
            assert not back.is_error, text(back)
    finally:
        os.kill(pid, signal.SIGCONT)
        server.stop()
    assert "Traceback" not in "".join(server.stderr)
