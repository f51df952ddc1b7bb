"""Replicas behind a balancer: redis-server, two or three `presets serve --store redis://...`
and nginx in front (tests/e2e/replicas.py), driven as a user would, through the balancer.

A 2026-07-28 client (``mcp.Client``, default mode) may reach any replica on any request;
a 2025-11-25 session goes back to the replica whose name starts its id. Where a test
must say which replica serves a step, it talks to that replica directly. Every wait is
for an event, bounded generously: the machine is shared.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.subscriptions import ToolsListChanged

from .conftest import HttpServer
from .rawhttp import RawSession
from .replicas import Deployment, Upstream, deployment, presets, routing_config

pytestmark = pytest.mark.anyio

THEME = "general-theme-tools"
THEME_TOOL = "space_app_set_theme"
SHAPE_TOOL = "space_drawing_insert_shape"
INSPECT_TOOL = "space_drawing_inspect"
DELETE_LAYER = "space_drawing_delete_layer"
DESTRUCTIVE = "drawing-layer-destructive-tools"
ASK = "space_presets_request"
DRAWING = ("--surface", "canvas", "--activity", "drawing")
DOCS = Path(__file__).parents[2] / "docs" / "replicas.md"


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def names(client: Client) -> set[str]:
    # "refresh": ask the replica that serves this request, not the client's cache.
    return {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}


@asynccontextmanager
async def client_of(url: str, token: str | None = None, **kwargs: Any) -> AsyncIterator[Client]:
    """An SDK client of ``url`` (default mode: 2026-07-28), with ``token`` as its bearer."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    async with http, Client(streamable_http_client(url, http_client=http), **kwargs) as client:
        yield client


async def operator(running: Deployment, *args: str) -> Any:
    """``presets ARGS --store URL``, which must succeed; its JSON when ``--json`` is given."""
    done = await anyio.to_thread.run_sync(lambda: running.presets(*args))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in args else done


async def heard(sub: Any, kind: type, timeout: float = 30) -> bool:
    with anyio.fail_after(timeout):
        async for event in sub:
            if isinstance(event, kind):
                return True
    return False


async def silent(sub: Any, seconds: float) -> bool:
    """Whether ``sub`` hears nothing for ``seconds``."""
    with anyio.move_on_after(seconds):
        async for event in sub:
            raise AssertionError(f"heard {event!r}")
    return True


def shape(n: int) -> dict[str, Any]:
    return {"shape": "rect", "x": n % 500, "y": n // 500, "width": 5, "height": 5}


Shape = tuple[str, float, float]
"""A shape's id and where it is: each write puts its shape somewhere no other write does."""


def shape_of(obj: dict[str, Any]) -> Shape:
    return (obj["id"], obj["x"], obj["y"])


async def shapes(client: Client) -> list[Shape]:
    result = await client.call_tool(INSPECT_TOOL, {})
    assert not result.is_error, text(result)
    doc = result.structured_content
    assert doc is not None
    return [shape_of(obj) for layer in doc["layers"] for obj in layer["objects"]]


def acknowledged_shape(result: Any) -> Shape:
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return shape_of(result.structured_content["object"])


# -- the balancer's configuration ------------------------------------------------------------


def test_the_documented_nginx_config_is_the_one_the_tests_run() -> None:
    blocks = re.findall(r"```nginx\n(.*?)```", DOCS.read_text(), re.S)
    assert blocks, f"{DOCS} has no nginx block"
    upstreams = [Upstream("r1", "127.0.0.1:8801"), Upstream("r2", "127.0.0.1:8802")]
    assert blocks[0] == routing_config("8800", upstreams)


# -- the session-id option -----------------------------------------------------------------


def test_a_replica_name_starts_every_legacy_session_id_and_only_its_own_reach_it(
    tmp_path: Path,
) -> None:
    server = HttpServer(tmp_path / "state", "--replica", "r7")
    try:
        session = RawSession(server.url)
        session.initialize()
        prefix, _, own = session.session_id.partition(".")
        assert prefix == "r7" and re.fullmatch(r"[0-9a-f]{32}", own), session.session_id
        assert session.answer("tools/list")["result"]["tools"]

        for foreign in (f"r8.{own}", own):  # another replica's, and the SDK's id bare
            other = RawSession(server.url)
            other.session_id = foreign
            status, _, _ = other.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
            assert status == 404, foreign
        assert session.answer("tools/list")["result"]["tools"]  # untouched by either
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--transport", "http", "--replica", "r.1"), "cannot start a session id"),
        (("--transport", "http", "--replica", "x" * 33), "1 to 32 letters"),
        (("--replica", "r1"), "--replica needs --transport http"),
    ],
)
def test_a_replica_name_that_cannot_route_is_refused_before_anything_starts(
    tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    state = tmp_path / "state"
    done = presets("serve", "--state-dir", str(state), *flags, timeout=60)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (state / "events.jsonl").exists()


# -- affinity ------------------------------------------------------------------------------


async def test_a_legacy_session_keeps_working_through_the_balancer(tmp_path: Path) -> None:
    got = anyio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            got.set()

    with deployment(tmp_path, 2) as running:
        async with client_of(running.url, mode="legacy", message_handler=on_message) as client:
            assert client.protocol_version == "2025-11-25"
            # Round-robin would send every other request to the replica without the session.
            for _ in range(6):
                assert THEME_TOOL in await names(client)
            result = await client.call_tool(THEME_TOOL, {"theme": "dark"})
            assert not result.is_error, text(result)
            # A change made through the store reaches the session on its GET stream.
            await operator(running, "off", THEME)
            with anyio.fail_after(30):
                await got.wait()
            assert THEME_TOOL not in await names(client)
        assert not running.tracebacks()


async def test_a_legacy_session_whose_replica_died_is_told_to_start_again(tmp_path: Path) -> None:
    with deployment(tmp_path, 2) as running:
        session = RawSession(running.url)
        session.initialize()
        home = next(r for r in running.replicas if session.session_id.startswith(r.name + "."))
        home.kill()
        status, _, events = session.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        # 404 is what tells a client its session is gone (not a 502 it may retry forever).
        assert status == 404, events
        fresh = RawSession(running.url)
        fresh.initialize()  # a new session opens on a replica that lives
        assert not fresh.session_id.startswith(home.name + ".")
        assert fresh.answer("tools/list")["result"]["tools"]


# -- per-principal state across replicas ---------------------------------------------------


async def test_alice_served_stable_keeps_her_list_on_every_replica_when_she_switches(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 2, "--auth", "tokens") as running:
        alice = (await operator(running, "tokens", "create", "alice")).stdout.strip()
        one, two = running.replicas
        async with (
            client_of(one.url, alice) as alice_one,
            client_of(two.url, alice) as alice_two,
            client_of(running.url, alice) as alice_any,
            alice_two.listen(tools_list_changed=True) as alice_hears,
        ):
            before = await names(alice_two)
            # A replica fixes a stable list when it first serves the principal
            # (docs/replicas.md): her client has listed on both before it switches.
            assert await names(alice_one) == before
            for tool, args in (
                ("space_app_switch_surface", {"surface": "canvas"}),
                ("space_app_set_activity", {"activity": "drawing"}),
            ):
                result = await alice_one.call_tool(tool, args)
                assert not result.is_error, text(result)
            # Her own switch, made on replica 1: no replica moves her list or tells her so.
            assert await silent(alice_hears, seconds=2)
            assert await names(alice_two) == before
            for _ in range(4):  # through the balancer, whichever replica answers
                assert await names(alice_any) == before
            # The drawing tool is hers all the same, through presets_call, on either replica.
            drawn = await alice_two.call_tool(
                "space_presets_call",
                {
                    "name": SHAPE_TOOL,
                    "arguments": {"shape": "rect", "x": 1, "y": 1, "width": 4, "height": 4},
                },
            )
            assert not drawn.is_error, text(drawn)
        assert not running.tracebacks()


async def test_alice_switches_context_on_one_replica_and_her_list_follows_on_another(
    tmp_path: Path,
) -> None:
    # --delivery live: the list follows her own switch (served stable, it would not: below).
    with deployment(tmp_path, 2, "--auth", "tokens", "--delivery", "live") as running:
        alice = (await operator(running, "tokens", "create", "alice")).stdout.strip()
        bob = (await operator(running, "tokens", "create", "bob")).stdout.strip()
        one, two = running.replicas
        async with (
            client_of(one.url, alice) as alice_one,
            client_of(two.url, alice) as alice_two,
            client_of(two.url, bob) as bob_two,
            client_of(running.url, alice) as alice_any,
            # Alice listens on replica 2 before it ever served her a list.
            alice_two.listen(tools_list_changed=True) as alice_hears,
            bob_two.listen(tools_list_changed=True) as bob_hears,
        ):
            bob_before = await names(bob_two)
            for tool, args in (
                ("space_app_switch_surface", {"surface": "canvas"}),
                ("space_app_set_activity", {"activity": "drawing"}),
            ):
                result = await alice_one.call_tool(tool, args)
                assert not result.is_error, text(result)
            assert await heard(alice_hears, ToolsListChanged)
            assert SHAPE_TOOL in await names(alice_two)
            for _ in range(4):  # through the balancer, whichever replica answers
                assert SHAPE_TOOL in await names(alice_any)
            assert await names(bob_two) == bob_before
            assert await silent(bob_hears, seconds=1)  # alice's notice came; bob's would have
        assert not running.tracebacks()


async def test_an_operators_principal_change_in_the_store_reaches_that_principal_everywhere(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 2, "--auth", "tokens") as running:
        alice = (await operator(running, "tokens", "create", "alice")).stdout.strip()
        bob = (await operator(running, "tokens", "create", "bob")).stdout.strip()
        one, two = running.replicas
        async with (
            client_of(one.url, alice) as alice_one,
            client_of(two.url, alice) as alice_two,
            client_of(two.url, bob) as bob_two,
        ):
            assert THEME_TOOL in await names(alice_one)
            await operator(running, "off", THEME, "--principal", "alice")
            for client in (alice_one, alice_two):
                assert THEME_TOOL not in await names(client)
            assert THEME_TOOL in await names(bob_two)
            await operator(
                running, "context", "set", "surface=canvas", "activity=drawing",
                "--principal", "bob",
            )  # fmt: skip
            assert SHAPE_TOOL in await names(bob_two)
            assert SHAPE_TOOL not in await names(alice_two)
            kept = await operator(running, "status", "--principal", "bob", "--json")
            assert kept["principals"] == ["alice", "bob", "local"]
            assert kept["own"]["context"]["surface"] == "canvas"
            await operator(running, "auto", THEME, "--principal", "alice")
            assert THEME_TOOL in await names(alice_two)
        assert not running.tracebacks()


async def test_presets_on_against_the_store_reaches_every_replica_and_its_listen_stream(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 3) as running:
        async with (
            client_of(running.replicas[0].url) as a,
            client_of(running.replicas[1].url) as b,
            client_of(running.replicas[2].url) as c,
        ):
            clients = (a, b, c)
            for state, present in (("off", False), ("on", True)):
                async with (
                    a.listen(tools_list_changed=True) as sa,
                    b.listen(tools_list_changed=True) as sb,
                    c.listen(tools_list_changed=True) as sc,
                ):
                    await operator(running, state, THEME)
                    for sub in (sa, sb, sc):
                        assert await heard(sub, ToolsListChanged)
                for client in clients:
                    assert (THEME_TOOL in await names(client)) is present
        assert not running.tracebacks()


async def test_an_approval_from_the_store_applies_and_a_waiting_call_runs_once(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 2, *DRAWING, "--confirm", "destructive") as running:
        one, two = running.replicas
        async with client_of(one.url) as on_one, client_of(two.url) as on_two:
            # The agent asks through replica 1; the operator approves against the store.
            asked = await on_one.call_tool(
                ASK, {"preset": DESTRUCTIVE, "state": "on", "reason": "clean up"}
            )
            assert not asked.is_error, text(asked)
            assert asked.structured_content is not None
            request = asked.structured_content["request"]
            assert asked.structured_content["status"] == "pending"
            await operator(running, "approve", request, "--yes")  # a destructive preset
            assert DELETE_LAYER in await names(on_two)

            added = await on_two.call_tool("space_drawing_add_layer", {"name": "scratch"})
            assert not added.is_error, text(added)
            layer = added.structured_content
            assert layer is not None
            results: list[Any] = []

            async def delete() -> None:
                results.append(
                    await on_two.call_tool(
                        DELETE_LAYER, {"layer": "scratch"}, read_timeout_seconds=120
                    )
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(delete)
                waiting = await pending_call(running)
                assert waiting["tool"] == DELETE_LAYER
                await operator(running, "approve", waiting["id"])
            assert len(results) == 1 and not results[0].is_error, text(results[0])
            again = await anyio.to_thread.run_sync(
                lambda: running.presets("approve", waiting["id"])
            )
            assert again.returncode == 1 and "no pending request" in again.stderr
            assert await operator(running, "requests", "--json") == []
        stats = await operator(running, "stats", "--json")
        assert stats["calls_by_tool"].get(DELETE_LAYER) == 1
        assert not running.tracebacks()


async def pending_call(running: Deployment, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        calls = [r for r in await operator(running, "requests", "--json") if r["kind"] == "call"]
        if calls:
            assert len(calls) == 1, calls
            return dict(calls[0])
        await anyio.sleep(0.2)
    raise AssertionError("no call request was filed")


# -- shared counters and shared data -------------------------------------------------------


async def test_a_call_budget_counts_every_replicas_calls_exactly(tmp_path: Path) -> None:
    with deployment(tmp_path, 2, "--max-calls", "10") as running:
        outcomes: list[bool] = []

        async def caller() -> None:
            async with client_of(running.url) as client, anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(call, client)

        async def call(client: Client) -> None:
            result = await client.call_tool(THEME_TOOL, {"theme": "dark"})
            if result.is_error:
                assert "budget" in text(result) or "max" in text(result), text(result)
            outcomes.append(not result.is_error)

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(caller)
        assert len(outcomes) == 32
        assert outcomes.count(True) == 10
        assert not running.tracebacks()


async def test_two_replicas_writing_one_drawing_keep_every_shape(tmp_path: Path) -> None:
    with deployment(tmp_path, 2, *DRAWING) as running:
        acknowledged: list[Shape] = []

        async def writer(url: str, base: int) -> None:
            async with client_of(url) as client:

                async def insert(n: int) -> None:
                    acknowledged.append(
                        acknowledged_shape(await client.call_tool(SHAPE_TOOL, shape(n)))
                    )

                async with anyio.create_task_group() as tg:
                    for n in range(base, base + 50):
                        tg.start_soon(insert, n)

        async with anyio.create_task_group() as tg:
            for index, replica in enumerate(running.replicas):
                tg.start_soon(writer, replica.url, index * 50)
        assert len({id_ for id_, _, _ in acknowledged}) == 100  # 100 shapes, 100 ids
        for replica in running.replicas:
            async with client_of(replica.url) as client:
                assert sorted(await shapes(client)) == sorted(acknowledged)
        assert not running.tracebacks()


# -- failures ------------------------------------------------------------------------------


class Writers:
    """Clients inserting shapes through the balancer until told to stop; what was acknowledged."""

    def __init__(self, url: str, count: int = 4) -> None:
        self.url = url
        self.count = count
        self.acknowledged: list[Shape] = []
        self.failures: list[str] = []
        self.slowest = 0.0
        self.stopping = anyio.Event()
        self._n = 0

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(self.count):
                tg.start_soon(self._writer)

    async def _writer(self) -> None:
        while not self.stopping.is_set():
            try:
                async with client_of(self.url) as client:
                    await self._write(client)
            except Exception as exc:  # a connection cut mid-answer ends the SDK client itself
                self.failures.append(f"client ended: {exc!r}")
                await anyio.sleep(0.05)

    async def _write(self, client: Client) -> None:
        while not self.stopping.is_set():
            self._n += 1
            started = time.monotonic()
            try:
                result = await client.call_tool(SHAPE_TOOL, shape(self._n), read_timeout_seconds=60)
            except Exception as exc:  # the balancer's 503, a dropped connection
                self.failures.append(f"{type(exc).__name__}: {exc}")
                await anyio.sleep(0.05)
                continue
            finally:
                self.slowest = max(self.slowest, time.monotonic() - started)
            if result.is_error or result.structured_content is None:
                self.failures.append(text(result))
                await anyio.sleep(0.05)
            else:
                self.acknowledged.append(shape_of(result.structured_content["object"]))

    async def wait_for(self, more: int, timeout: float = 60) -> None:
        """Until ``more`` further writes are acknowledged."""
        goal = len(self.acknowledged) + more
        with anyio.fail_after(timeout):
            while len(self.acknowledged) < goal:
                await anyio.sleep(0.05)


async def test_a_replica_killed_mid_run_leaves_the_others_serving_and_loses_no_write(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 2, *DRAWING) as running:
        writers = Writers(running.url)
        async with anyio.create_task_group() as tg:
            tg.start_soon(writers.run)
            await writers.wait_for(20)
            running.replicas[0].kill()
            killed_at = len(writers.acknowledged)
            await writers.wait_for(40)  # the replica left keeps serving
            writers.stopping.set()
        assert len(writers.acknowledged) >= killed_at + 40
        # Only the calls in flight on the killed replica may fail.
        assert len(writers.failures) <= writers.count, writers.failures
        async with client_of(running.replicas[1].url) as client:
            kept = set(await shapes(client))
        assert set(writers.acknowledged) <= kept
        assert not running.replicas[1].tracebacks()


async def test_redis_restarted_mid_run_fails_calls_clearly_and_the_replicas_recover(
    tmp_path: Path,
) -> None:
    with deployment(tmp_path, 2, *DRAWING) as running:
        assert running.redis is not None
        writers = Writers(running.url)
        async with anyio.create_task_group() as tg:
            tg.start_soon(writers.run)
            await writers.wait_for(20)
            running.redis.kill()  # AOF fsynced on every write: nothing acknowledged is lost
            before = len(writers.failures)
            with anyio.fail_after(60):
                while len(writers.failures) < before + 4:
                    await anyio.sleep(0.05)
            down = writers.failures[before:]
            running.redis.start()
            await writers.wait_for(20)  # the same replicas, not restarted
            writers.stopping.set()
        # Each call meanwhile failed within a bound, saying what failed, no traceback.
        assert writers.slowest < 30, writers.slowest
        for failure in down:
            assert "Traceback" not in failure
            assert re.search(r"redis|store", failure, re.I), failure
        assert all(r.process.poll() is None for r in running.replicas)
        async with client_of(running.url) as client:
            kept = set(await shapes(client))
        assert set(writers.acknowledged) <= kept
        assert not running.tracebacks()
