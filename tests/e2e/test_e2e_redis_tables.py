"""Runtime tables on Redis: several writers of one world keep every write.

Two replicas on one Redis (each its own state directory) hold one drawing,
graph and scene between them. What must hold, against a real ``redis-server``:

- concurrent changes through both replicas all land, with distinct ids, and
  each replica sees them all;
- however writers interleave (hypothesis chooses who commits first), no
  acknowledged change is lost or duplicated;
- a replica killed with SIGKILL mid-run loses no change it acknowledged, and
  the other keeps serving;
- Redis down: a call gets a clear error result at once, and the replica works
  again when Redis is back, with nothing acknowledged lost.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_presets.server.store.redisrows import RedisRows, TablesUnavailableError
from agent_presets_drawing.document import Drawing
from agent_presets_graph.model import Graph
from agent_presets_scene.model import Scene

from .conftest import port_of, serve_command, spawn_http, terminate
from .rawhttp import RawSession
from .redisrows import RedisServer

CALLS = 50
PRESETS_ON = (
    "drawing-shape-tools",
    "graph-node-tools",
    "graph-state-tools",
    "scene-object-tools",
    "scene-state-tools",
)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    redis_server.flush()
    return redis_server.url


# -- the three models, as a test drives them ------------------------------------------


@dataclass(frozen=True)
class Model:
    name: str
    open: Callable[[Any], Any]
    add: Callable[[Any, int], str]
    """Add one thing labelled by the number; its id."""
    ids: Callable[[Any], list[str]]
    """Every thing's id, as the runtime reads its state (through its sync)."""


MODELS = [
    Model(
        "drawing",
        Drawing.from_table,
        lambda d, i: d.insert_shape("rect", i, i, 5, 5)["id"],
        lambda d: [o["id"] for layer in d.inspect()["layers"] for o in layer["objects"]],
    ),
    Model(
        "graph",
        Graph.from_table,
        lambda g, i: g.add_node(f"n{i}").id,
        lambda g: [n["id"] for n in g.to_state()["nodes"]],
    ),
    Model(
        "scene",
        Scene.from_table,
        lambda s, i: s.add_cuboid([float(i), 0.0, 0.0], [1.0, 1.0, 1.0]).id,
        lambda s: [o["id"] for o in s.to_state()["objects"]],
    ),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_two_writers_times_fifty_concurrent_adds_leave_a_hundred(
    redis_url: str, model: Model
) -> None:
    stores = [RedisRows(redis_url), RedisRows(redis_url)]
    replicas = [model.open(store.table(model.name, "home")) for store in stores]
    try:
        with ThreadPoolExecutor(2 * CALLS) as pool:
            ids = list(pool.map(lambda i: model.add(replicas[i % 2], i), range(2 * CALLS)))
        assert len(set(ids)) == 2 * CALLS
        for replica in replicas:
            assert sorted(model.ids(replica)) == sorted(ids)
        fresh = model.open(RedisRows(redis_url).table(model.name, "home"))
        assert sorted(model.ids(fresh)) == sorted(ids)
    finally:
        for store in stores:
            store.close()


class RacingTable:
    """A Redis table whose ``stale()`` first lets a rival writer commit, when told to.

    That is the race optimistic concurrency exists for: the rival commits after
    this writer checked its rows were current and before it commits on them.
    """

    def __init__(self, table: Any) -> None:
        self.table = table
        self.rival: Callable[[], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def stale(self) -> bool:
        answer: bool = self.table.stale()
        rival, self.rival = self.rival, None
        if rival is not None:
            rival()
        return answer


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(schedule=st.lists(st.tuples(st.integers(0, 2), st.none() | st.integers(0, 2)), max_size=12))
def test_interleaved_writers_never_lose_or_repeat_a_change(
    redis_server: RedisServer, model: Model, schedule: list[tuple[int, int | None]]
) -> None:
    redis_server.flush()
    stores = [RedisRows(redis_server.url) for _ in range(3)]
    tables = [RacingTable(store.table(model.name, "home")) for store in stores]
    writers = [model.open(table) for table in tables]
    acknowledged: list[str] = []
    try:
        for n, (writer, racer) in enumerate(schedule):
            if racer is not None and racer != writer:
                # The rival's change lands between this writer's check and its commit.
                tables[writer].rival = lambda r=racer, n=n: acknowledged.append(
                    model.add(writers[r], 1000 + n)
                )
            acknowledged.append(model.add(writers[writer], n))
        assert len(set(acknowledged)) == len(acknowledged)
        for each in writers:
            assert sorted(model.ids(each)) == sorted(acknowledged)
    finally:
        for store in stores:
            store.close()


# -- the table itself: the embedded table's contract, on Redis --------------------------


def test_the_redis_table_keeps_the_embedded_tables_contract(redis_url: str, tmp_path: Path) -> None:
    from agent_presets.host import StateStore

    embedded = StateStore(tmp_path / "state.db")
    shared = RedisRows(redis_url)
    try:
        for table in (embedded.table("notes", "home"), shared.table("notes", "home")):
            table.put("b", {"x": [1, 2]})
            table.put("a/1", "one")
            table.put("a/2", 2.5)
            with table.transaction():
                table.put("c", None)
                with table.transaction():
                    table.delete("b")
                assert table.get("b") is None  # a transaction reads its own writes
            with pytest.raises(RuntimeError), table.transaction():
                table.put("d", 1)
                table.clear()
                assert table.items() == []
                raise RuntimeError("rolled back")
            assert table.items() == [("a/1", "one"), ("a/2", 2.5), ("c", None)]
            assert table.keys("a/") == ["a/1", "a/2"]
            assert table.get("missing", "default") == "default"
            assert not table.stale()
    finally:
        embedded.close()
        shared.close()


def test_a_commit_on_rows_another_writer_changed_is_refused_and_writes_nothing(
    redis_url: str,
) -> None:
    from agent_presets import RowConflict

    first, second = RedisRows(redis_url), RedisRows(redis_url)
    mine, theirs = first.table("notes", "home"), second.table("notes", "home")
    try:
        mine.snapshot()
        theirs.snapshot()
        theirs.put("k", "theirs")
        assert mine.stale()
        with pytest.raises(RowConflict):
            mine.put("k", "mine")
        assert dict(mine.snapshot()) == {"k": "theirs"}
        assert not mine.stale()
        mine.put("k", "mine")  # on the rows it now holds, it commits
        assert theirs.stale() and theirs.get("k") == "mine"
    finally:
        first.close()
        second.close()


def test_a_world_dropped_by_one_replica_is_empty_for_the_other(redis_url: str) -> None:
    stores = [RedisRows(redis_url), RedisRows(redis_url)]
    mine, theirs = (Graph.from_table(store.table("graph", "work")) for store in stores)
    try:
        mine.add_node("kept elsewhere")
        Graph.from_table(stores[0].table("graph", "home")).add_node("home stays")
        assert len(theirs.to_state()["nodes"]) == 1
        stores[0].drop_world("work")
        assert theirs.to_state()["nodes"] == []
        assert theirs.add_node("after").id == "n1"  # counters went with the rows
        home = Graph.from_table(stores[1].table("graph", "home"))
        assert [n["label"] for n in home.to_state()["nodes"]] == ["home stays"]
    finally:
        for store in stores:
            store.close()


def test_redis_down_is_a_clear_error_and_nothing_hangs(tmp_path: Path) -> None:
    from .redisrows import free_port

    rows = RedisRows(f"redis://127.0.0.1:{free_port()}/0")
    started = time.monotonic()
    with pytest.raises(
        TablesUnavailableError, match=r"Redis at redis://127\.0\.0\.1:\d+/0, .* is unavailable"
    ):
        Drawing.from_table(rows.table("drawing", "home"))
    assert time.monotonic() - started < 10


# -- replicas: real servers on one Redis ------------------------------------------------


class Replica:
    """``presets serve --transport http --store URL`` on a state directory of its own."""

    def __init__(self, state_dir: Path, store: str) -> None:
        on = [arg for name in PRESETS_ON for arg in ("--on", name)]
        command = serve_command(
            "--transport", "http", "--host", "127.0.0.1", "--port", "0",
            "--state-dir", str(state_dir), "--store", store, "--no-event-log", *on,
        )  # fmt: skip
        self.process, self.url, self.stderr = spawn_http(command, 30.0)
        self.port = port_of(self.url)
        self.session = RawSession(self.url)
        self.session.initialize()

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.session.answer(
            "tools/call", {"name": f"space_{name}", "arguments": arguments}
        )["result"]
        return result

    def value(self, name: str, arguments: dict[str, Any]) -> Any:
        result = self.call(name, arguments)
        assert not result.get("isError"), result
        if "structuredContent" in result:
            return result["structuredContent"]
        return json.loads(result["content"][0]["text"])

    def stop(self) -> None:
        terminate(self.process)


@pytest.fixture
def replicas(tmp_path: Path, redis_url: str) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for n in (1, 2):
            started.append(Replica(tmp_path / f"state-{n}", redis_url))
        yield started
    finally:
        for replica in started:
            replica.stop()


ADD = {
    "drawing": (
        "drawing_insert_shape",
        lambda i: {"shape": "rect", "x": i, "y": 0, "width": 4, "height": 4},
    ),
    "graph": ("graph_add_node", lambda i: {"label": f"node {i}"}),
    "scene": ("scene_add_cuboid", lambda i: {"position": [i, 0, 0], "size": [1, 1, 1]}),
}


def shown_ids(replica: Replica, model: str) -> list[str]:
    if model == "drawing":
        doc = replica.value("drawing_inspect", {})
        return [o["id"] for layer in doc["layers"] for o in layer["objects"]]
    state = replica.value(f"{model}_get_state", {})
    return [item["id"] for item in state["nodes" if model == "graph" else "objects"]]


def test_two_replicas_times_fifty_concurrent_calls_leave_a_hundred_of_each(
    replicas: list[Replica],
) -> None:
    for model, (tool, arguments) in ADD.items():
        with ThreadPoolExecutor(2 * CALLS) as pool:
            answers = list(
                pool.map(
                    lambda i, tool=tool, arguments=arguments: replicas[i % 2].value(
                        tool, arguments(i)
                    )["id"],
                    range(2 * CALLS),
                )
            )
        assert len(set(answers)) == 2 * CALLS, model
        for replica in replicas:
            assert sorted(shown_ids(replica, model)) == sorted(answers), model


def test_a_replica_killed_mid_run_loses_no_acknowledged_write(
    replicas: list[Replica], redis_url: str
) -> None:
    doomed, survivor = replicas
    tool, arguments = ADD["drawing"]
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def insert(i: int) -> str | None:
        replica = doomed if i % 2 == 0 else survivor
        try:
            answer = replica.value(tool, arguments(i))["id"]
        except Exception:
            if replica is survivor:
                raise
            return None  # the doomed replica died before it answered: not acknowledged
        with lock:
            acknowledged.append(answer)
            if len(acknowledged) >= CALLS // 2:
                enough.set()
        return str(answer)

    with ThreadPoolExecutor(2 * CALLS) as pool:
        futures = [pool.submit(insert, i) for i in range(2 * CALLS)]
        assert enough.wait(60)
        doomed.process.kill()  # SIGKILL, by the PID of the process this test started
        answers = [future.result(timeout=120) for future in futures]
    assert all(answers[i] is not None for i in range(1, 2 * CALLS, 2)), "the survivor failed"
    assert None in answers[0::2], "the doomed replica answered every call before it was killed"
    on_survivor = shown_ids(survivor, "drawing")
    assert set(acknowledged) <= set(on_survivor)
    assert len(set(on_survivor)) == len(on_survivor)
    fresh = Drawing.from_table(RedisRows(redis_url).table("drawing", "home"))
    assert sorted(o["id"] for _, o in fresh.objects()) == sorted(on_survivor)


def test_redis_restarted_mid_run_gives_clear_errors_then_recovers_with_nothing_lost(
    replicas: list[Replica], redis_server: RedisServer
) -> None:
    first, second = replicas
    tool, arguments = ADD["graph"]
    before = [first.value(tool, arguments(i))["id"] for i in range(3)]
    redis_server.stop()
    try:
        started = time.monotonic()
        result = first.call(tool, arguments(99))
        assert time.monotonic() - started < 10
        assert result["isError"], result
        text = result["content"][0]["text"]
        assert "is unavailable" in text and "Traceback" not in text, text
    finally:
        redis_server.start()
    after = second.value(tool, arguments(100))["id"]
    assert sorted(shown_ids(first, "graph")) == sorted([*before, after])
