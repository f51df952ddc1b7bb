"""The store interface on both of its implementations: embedded, and Redis (a real server).

Every operation of ``Store`` behaves the same on both; on Redis, two
``RedisStore`` instances stand for two replicas, so what one does the other
sees, a budget counts both replicas' calls exactly, and a Redis stopped
mid-run gives a clear ``StoreUnavailableError`` within the timeout and then
recovers, with nothing it acknowledged lost.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.redisserver import RedisServer
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_presets.server.store import (
    SERVER,
    PrincipalState,
    Store,
    StoreUnavailableError,
    open_store,
)
from agent_presets.server.store.embedded import EmbeddedStore
from agent_presets.server.store.redis import RECONNECTED, RedisStore, masked


@pytest.fixture(params=["embedded", "redis"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two views of one store: the same object embedded, two replicas' clients on Redis."""
    if request.param == "embedded":
        store = EmbeddedStore(tmp_path / "state")
        yield store, store
        store.close()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    first, second = RedisStore(server.url), RedisStore(server.url)
    yield first, second
    first.close()
    second.close()


class Heard:
    """A subscriber that records what it hears and lets a test wait for it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []
        self._cond = threading.Condition()

    def __call__(self, topic: str, payload: Any) -> None:
        with self._cond:
            self.items.append((topic, dict(payload)))
            self._cond.notify_all()

    def wait_for(self, count: int, timeout: float = 5.0) -> list[tuple[str, dict[str, Any]]]:
        with self._cond:
            self._cond.wait_for(lambda: len(self.items) >= count, timeout)
            return list(self.items)


# -- principal state -------------------------------------------------------------


def test_principal_state_is_kept_seen_by_every_replica_and_forgotten(
    stores: tuple[Store, Store],
) -> None:
    one, two = stores
    assert one.load_principal("alice") is None
    alice = PrincipalState(context={"surface": "canvas"}, overrides={"drawing": "on"})
    one.save_principal("alice", alice)
    one.save_principal(SERVER, PrincipalState(overrides={"shell": "off"}))
    one.save_principal("bob", PrincipalState())
    assert two.load_principal("alice") == alice
    assert two.load_principal(SERVER) == PrincipalState(overrides={"shell": "off"})
    assert two.principal_names() == ["alice", "bob"]  # SERVER left out, sorted
    two.save_principal("alice", None)
    assert one.load_principal("alice") is None
    assert one.principal_names() == ["bob"]
    one.save_principal("nobody", None)  # forgetting one never kept is no error
    assert one.principal_names() == ["bob"]


# -- the bus ---------------------------------------------------------------------


def test_every_subscriber_of_every_replica_hears_every_publish_in_order(
    stores: tuple[Store, Store],
) -> None:
    one, two = stores
    mine, theirs = Heard(), Heard()
    unsubscribe = one.subscribe(mine)
    two.subscribe(theirs)
    for n in range(20):
        one.publish("principal", {"name": f"p{n}"})
    expected = [("principal", {"name": f"p{n}"}) for n in range(20)]
    assert mine.wait_for(20) == expected  # the publisher's own subscriber too
    assert theirs.wait_for(20) == expected
    unsubscribe()
    two.publish("tokens", {})
    assert theirs.wait_for(21)[-1] == ("tokens", {})
    time.sleep(0.1)
    assert len(mine.items) == 20  # unsubscribed: hears nothing more


# -- budget counters -------------------------------------------------------------


def test_charge_counts_all_or_none_and_names_the_spent_counter(
    stores: tuple[Store, Store],
) -> None:
    one, two = stores
    assert one.charge([("calls", 2), ("tool:a", None)]) is None
    assert two.charge([("calls", 2), ("tool:b", 1)]) is None
    # calls is at its limit now: nothing is counted, and it is named.
    assert one.charge([("tool:a", None), ("calls", 2)]) == "calls"
    assert two.counts() == {"calls": 2, "tool:a": 1, "tool:b": 1}
    assert one.counts("tool:") == {"tool:a": 1, "tool:b": 1}
    # count=False only checks.
    assert one.charge([("other", 5)], count=False) is None
    assert "other" not in one.counts()
    assert one.charge([("tool:b", 1)], count=False) == "tool:b"


def test_charge_across_two_replicas_under_concurrency_admits_exactly_the_limit(
    redis_server: RedisServer,
) -> None:
    replicas = [RedisStore(redis_server.url), RedisStore(redis_server.url)]
    admitted: list[int] = []
    lock = threading.Lock()

    def caller(store: RedisStore) -> None:
        for _ in range(15):
            if store.charge([("calls", 10), ("tool:x", None)]) is None:
                with lock:
                    admitted.append(1)

    threads = [threading.Thread(target=caller, args=(replicas[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(admitted) == 10
    assert replicas[0].counts() == {"calls": 10, "tool:x": 10}
    for store in replicas:
        store.close()


Counters = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.integers(0, 3))),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(Counters, st.booleans()), max_size=12))
def test_embedded_charge_is_all_or_none(calls: list[tuple[Any, bool]]) -> None:
    store = EmbeddedStore()
    for counters, count in calls:
        before = store.counts()
        spent = store.charge(counters, count=count)
        after = store.counts()
        if spent is not None or not count:
            assert after == before  # refused, or only checked: nothing counted
        else:
            for key, _ in counters:
                bumped = sum(1 for k, _ in counters if k == key)
                assert after[key] == before.get(key, 0) + bumped
        at_limit = [k for k, lim in counters if lim is not None and before.get(k, 0) >= lim]
        # Refused exactly when a counter is at its limit, naming the first such.
        assert spent == (at_limit[0] if at_limit else None)


# -- Redis away and back ---------------------------------------------------------


def test_redis_stopped_gives_a_clear_error_in_time_then_recovers_losing_nothing(
    redis_server: RedisServer,
) -> None:
    store = RedisStore(redis_server.url, timeout=1.0)
    heard = Heard()
    store.subscribe(heard)
    store.save_principal("alice", PrincipalState(context={"surface": "canvas"}))
    for _ in range(5):
        assert store.charge([("calls", None)]) is None
    redis_server.kill()  # a crash: only what AOF fsynced may survive (appendfsync always)

    for operation in (
        lambda: store.load_principal("alice"),
        lambda: store.charge([("calls", None)]),
        lambda: store.publish("principal", {"name": "alice"}),
        lambda: store.save_principal("bob", PrincipalState()),
    ):
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError) as caught:
            operation()
        assert time.monotonic() - started < store.timeout + 1.5
        message = str(caught.value)
        assert redis_server.url in message and "Redis is running" in message

    redis_server.start()  # same port, same folder: the AOF is read back
    deadline = time.monotonic() + 10
    while True:
        try:
            state = store.load_principal("alice")
            break
        except StoreUnavailableError:
            assert time.monotonic() < deadline, "the store did not recover"
            time.sleep(0.1)
    assert state == PrincipalState(context={"surface": "canvas"})
    assert store.counts() == {"calls": 5}  # every acknowledged charge survived the crash
    # The bus subscribed again by itself: its subscriber is told, then hears new publishes.
    assert heard.wait_for(1)[0] == (RECONNECTED, {})
    store.publish("principal", {"name": "alice"})
    assert heard.wait_for(2)[-1] == ("principal", {"name": "alice"})
    store.close()


def test_a_redis_nobody_listens_on_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    from e2e.redisserver import free_port

    store = RedisStore(f"redis://:hunter2@127.0.0.1:{free_port()}/0", timeout=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        store.principal_names()
    assert time.monotonic() - started < 2.0
    assert "hunter2" not in str(caught.value) and ":***@127.0.0.1" in str(caught.value)
    store.close()


def test_store_urls_open_the_right_store_and_mask_passwords(redis_server: RedisServer) -> None:
    assert masked("redis://user:secret@host:6380/1") == "redis://user:***@host:6380/1"
    assert masked("redis://host/0") == "redis://host/0"
    store = open_store(redis_server.url + "?prefix=other:")
    assert isinstance(store, RedisStore) and store.prefix == "other:"
    store.save_principal("alice", PrincipalState())
    default = open_store(redis_server.url)
    assert default.principal_names() == []  # another prefix: another deployment
    store.close()
    default.close()
    with pytest.raises(ValueError, match=r"embedded .*or redis://"):
        open_store("postgres://x")


# -- what goes behind the store --------------------------------------------------


def test_max_calls_across_two_replicas_admits_exactly_ten_calls(
    redis_server: RedisServer,
) -> None:
    from agent_presets.server.policy import GateError, ToolPolicy

    replicas = [
        ToolPolicy(max_calls=10, max_calls_per_tool=8, store=RedisStore(redis_server.url))
        for _ in range(2)
    ]
    outcomes: list[str] = []
    lock = threading.Lock()

    def caller(policy: ToolPolicy, tool: str) -> None:
        for _ in range(6):
            try:
                policy.admit(tool)
                result = "ok"
            except GateError as exc:
                result = str(exc)
            with lock:
                outcomes.append(result)

    threads = [
        threading.Thread(target=caller, args=(replicas[i % 2], "a" if i < 2 else "b"))
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("ok") == 10
    refused = {o for o in outcomes if o != "ok"}
    assert any("call budget of this server (10 tool calls)" in o for o in refused)
    assert replicas[0].calls == replicas[1].calls == 10
    assert sum(replicas[1].calls_by_tool.values()) == 10
    for policy in replicas:
        policy.store.close()
