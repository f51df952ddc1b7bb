"""The Redis store: what replicas share, in one Redis database.

Every key starts with a prefix (``presets:`` unless the URL's ``?prefix=``
says otherwise), so one Redis database serves one deployment:

- ``PREFIX principal:NAME``: a principal's state (JSON), and ``PREFIX principals``, the set of
  names that have one;
- ``PREFIX bus``: the pub/sub channel every replica publishes on and listens to;
- ``PREFIX counters``: the budget counters (a hash, changed only by one Lua script).

The interface is synchronous and its callers are threads and the server's
event loop, while the client (``redis.asyncio``) wants a loop of its own: the
store runs one asyncio loop on a thread of its own, which holds the client,
and each operation is a coroutine submitted to it and waited for at most
``timeout`` seconds. Past that, or when Redis refuses the connection, the
operation raises ``StoreUnavailableError`` naming the URL (its password
masked) and what to do, whatever thread asked. Nothing needs a restart when
Redis comes back: the next operation connects again, and the bus subscribes
again by itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import logging
import queue
import secrets
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agent_presets.lib.listeners import Listeners
from agent_presets.server.store.base import (
    SERVER,
    PrincipalState,
    StoreSettingsError,
    StoreUnavailableError,
    Subscriber,
)
from agent_presets.server.store.redishandle import LINGER

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import OutOfMemoryError, RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - the message is the test
    raise ImportError(
        "the Redis store (--store redis://...) needs the redis client, which is not "
        "installed: install it with `pip install 'agent-presets[redis]'` (or `uv add redis`)"
    ) from exc

if TYPE_CHECKING:
    from redis.asyncio.client import PubSub

    from agent_presets.server.store.redislog import RedisEventLog
    from agent_presets.server.store.redisrequests import SharedRequestStore
    from agent_presets.server.store.redistokens import RedisTokenStore, RedisTokenTable

T = TypeVar("T")

log = logging.getLogger("agent_presets.server.store")

DEFAULT_TIMEOUT: Final = 2.0
"""Seconds an operation waits for Redis before it raises ``StoreUnavailableError``."""
DEFAULT_PREFIX: Final = "presets:"
RESUBSCRIBE_SECONDS: Final = 0.25
"""How long the bus waits between attempts to subscribe again while Redis is away."""
RECONNECTED: Final = "store.reconnected"
"""The topic a replica's own subscribers hear (payload ``{}``) when its bus subscribed again
after losing Redis: what was published meanwhile did not reach them, so re-read what they
keep."""

# Count one call against every (key, limit) pair, all or none: KEYS[1] is the counters'
# hash; ARGV[1] is 1 to count (0 only checks), then key, limit pairs ("" for no limit).
# Returns the first key at its limit, or nil.
_CHARGE: Final = """
local n = (#ARGV - 1) / 2
for i = 0, n - 1 do
  local limit = ARGV[3 + 2 * i]
  if limit ~= '' then
    local used = tonumber(redis.call('HGET', KEYS[1], ARGV[2 + 2 * i]) or '0')
    if used >= tonumber(limit) then return ARGV[2 + 2 * i] end
  end
end
if ARGV[1] == '1' then
  for i = 0, n - 1 do redis.call('HINCRBY', KEYS[1], ARGV[2 + 2 * i], 1) end
end
return false
"""


def masked(url: str) -> str:
    """``url`` without its password (``redis://:***@host:6379/0``), for messages and status."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def split_prefix(url: str) -> tuple[str, str]:
    """The URL the client connects to, and the key prefix its ``?prefix=`` names."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), DEFAULT_PREFIX)
    rest = [(k, v) for k, v in query if k != "prefix"]
    return urlunsplit(parts._replace(query=urlencode(rest))), prefix


class RedisStore:
    """Principal state, the bus and the budget counters of replicas sharing one Redis.

    ``timeout`` bounds every operation (seconds). Subscribers are called on a
    thread of the store's own (not its loop's), in the order messages
    arrived, so a subscriber may itself call the store.
    """

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        connect_url, self.prefix = split_prefix(url)
        self.url = masked(url)
        self.timeout = timeout
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="presets-store-redis", daemon=True
        )
        self._thread.start()
        try:
            self.client: aioredis.Redis = aioredis.Redis.from_url(
                connect_url,
                socket_timeout=timeout,
                socket_connect_timeout=timeout,
                # One quiet retry on a fresh connection: a connection pooled before Redis
                # restarted fails on first use although Redis is back. Timeouts are not
                # retried: the caller's bound is the timeout.
                retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            )
        except ValueError as exc:
            self._stop_loop()
            raise ValueError(f"--store {self.url}: {exc}") from None
        self._charge = self.client.register_script(_CHARGE)
        # A budget's check is a gate the call waits for, on the caller's own thread: a
        # blocking client there is one round trip (about 0.14 ms on loopback), where the
        # hand-off to the store's loop and back cost 0.6 ms (docs/performance.md).
        self._connect_url = connect_url
        self._gate: Any = None
        self._subscribers: Listeners[Subscriber] = Listeners()
        self._subscribed = threading.Event()
        self._listener: concurrent.futures.Future[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._listen_lock = threading.Lock()
        self._inbox: queue.SimpleQueue[tuple[str, Mapping[str, Any]] | None] = queue.SimpleQueue()
        self._dispatcher: threading.Thread | None = None
        # Counts of calls no budget limits, gathered between round trips (``charge``).
        self._sent = threading.Condition()
        self._unsent: dict[str, int] = {}
        self._sending = 0
        self._count_woken = False
        self._ids = itertools.count(1)

    def key(self, *parts: str) -> str:
        """The key of ``parts`` under this deployment's prefix."""
        return self.prefix + ":".join(parts)

    # -- running on the store's loop ---------------------------------------------

    def run(self, operation: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """Run ``operation(client)`` on the store's loop; wait at most ``timeout`` seconds.

        Raises ``StoreUnavailableError`` if Redis does not answer in time or
        refuses the connection; any other Redis error is re-raised as is.
        """
        if threading.current_thread() is self._thread:
            raise RuntimeError("a store operation was called on the store's own loop")
        if self._closed:
            raise StoreUnavailableError(f"the store {self.url} is closed (the server is stopping)")

        async def bounded() -> T:
            return await asyncio.wait_for(operation(self.client), self.timeout)

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return future.result(self.timeout + 1.0)
        except TimeoutError as exc:  # concurrent.futures' and asyncio's are this one
            future.cancel()
            raise self.unavailable(f"no answer within {self.timeout:g} s") from exc
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise self.unavailable(str(exc) or type(exc).__name__) from exc
        except OutOfMemoryError as exc:
            raise self.full() from exc

    def flush(self) -> None:
        """Wait (at most ``timeout``) until the counts of unlimited calls are in Redis."""
        with self._sent:
            if self._unsent and not self._count_woken:
                self._count_woken = True
                self._loop.call_soon_threadsafe(self._send_counts_soon)
            self._sent.wait_for(lambda: not self._unsent and not self._sending, self.timeout)

    def _send_counts_soon(self) -> None:
        self._loop.create_task(self._send_counts())

    async def _send_counts(self) -> None:
        """Send the counts gathered since the last batch, in one round trip."""
        await asyncio.sleep(LINGER)  # let the calls meanwhile join the batch
        with self._sent:
            batch, self._unsent = self._unsent, {}
            self._count_woken = False
            self._sending = len(batch)
        hash_key = self.key("counters")
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                for key, n in batch.items():
                    pipe.hincrby(hash_key, key, n)
                await asyncio.wait_for(pipe.execute(), self.timeout)
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("the store %s lost %d call counts: %s", self.url, sum(batch.values()), exc)
        finally:
            with self._sent:
                self._sending = 0
                self._sent.notify_all()

    def unavailable(self, why: str) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"the store at {self.url} is unavailable ({why}); nothing was changed. Check that "
            "Redis is running and reachable there, then try again: a running server "
            "reconnects by itself once Redis answers."
        )

    def full(self) -> StoreUnavailableError:
        """The error of a write Redis refused for memory (``maxmemory`` with ``noeviction``)."""
        return StoreUnavailableError(
            f"the store at {self.url} is full: Redis refused the write because its memory "
            "is at maxmemory (and its maxmemory-policy noeviction keeps every key); nothing "
            "was changed. Free memory in Redis or raise its maxmemory, then try again."
        )

    def ping(self) -> None:
        """Raise unless Redis answers now and keeps every key (a server checks at start).

        ``StoreUnavailableError`` when it does not answer; ``StoreSettingsError``
        when its ``maxmemory-policy`` evicts keys: the token table, the budget
        counters and the principals' state would vanish under memory pressure,
        and every token would get 401.
        """
        self.run(lambda r: r.ping())
        try:
            memory = self.run(lambda r: r.info("memory"))
        except ResponseError as exc:  # INFO refused (an ACL): the policy cannot be checked
            log.warning("could not check the maxmemory-policy of %s: %s", self.url, exc)
            return
        policy = str(memory.get("maxmemory_policy", "noeviction"))
        if policy.startswith(("allkeys-", "volatile-")):
            raise StoreSettingsError(
                f"the store at {self.url} runs Redis with maxmemory-policy {policy}, which "
                "evicts keys when memory runs short: the token table, the budget counters "
                "and the principals' state would vanish. Set maxmemory-policy noeviction "
                "(`CONFIG SET maxmemory-policy noeviction`, and in redis.conf), then start "
                "again; a full Redis then refuses writes with a clear error instead."
            )

    def event_log(self) -> RedisEventLog:
        """The event log's writer for this replica: lines go to the shared stream."""
        from agent_presets.server.store.redislog import RedisEventLog

        return RedisEventLog(self)

    def shared_key(self, name: str) -> bytes:
        """A 32-byte secret every replica shares: made by the first to ask (``SET NX``)."""
        key = self.key("secret", name)
        made = secrets.token_hex(32)

        async def get_or_make(r: aioredis.Redis) -> Any:
            async with r.pipeline(transaction=True) as pipe:
                pipe.set(key, made, nx=True)
                pipe.get(key)
                return (await pipe.execute())[1]

        return bytes.fromhex(_text(self.run(get_or_make)))

    def token_store(self) -> RedisTokenStore:
        """``presets tokens --store``: the table every replica reads."""
        from agent_presets.server.store.redistokens import RedisTokenStore

        return RedisTokenStore(self)

    def token_table(self) -> RedisTokenTable:
        """The server's view of the shared token table."""
        from agent_presets.server.store.redistokens import RedisTokenTable

        return RedisTokenTable(self)

    def request_store(
        self, emit: Callable[[Any], None] | None = None, ttl: float | None = None
    ) -> SharedRequestStore:
        """A server's pending requests, shared with every replica, hearing their decisions."""
        from agent_presets.server.requests import DEFAULT_TTL
        from agent_presets.server.store.redisrequests import SharedRequestStore

        return SharedRequestStore(self, ttl=ttl or DEFAULT_TTL, emit=emit).listen()

    # -- principal state ---------------------------------------------------------

    def load_principal(self, name: str) -> PrincipalState | None:
        raw = self.run(lambda r: r.get(self.key("principal", name)))
        if raw is None:
            return None
        return PrincipalState.from_json(json.loads(raw))

    def save_principal(self, name: str, state: PrincipalState | None) -> None:
        key = self.key("principal", name)
        names = self.key("principals")

        async def save(r: aioredis.Redis) -> None:
            async with r.pipeline(transaction=True) as pipe:
                if state is None:
                    pipe.delete(key)
                    pipe.srem(names, name)
                else:
                    pipe.set(key, json.dumps(state.to_json(), separators=(",", ":")))
                    pipe.sadd(names, name)
                await pipe.execute()

        self.run(save)

    def principal_names(self) -> list[str]:
        names = self.run(lambda r: r.smembers(self.key("principals")))
        return sorted(n for n in (_text(b) for b in names) if n != SERVER)

    # -- the bus -----------------------------------------------------------------

    def publish(self, topic: str, payload: Mapping[str, Any]) -> None:
        message = json.dumps({"topic": topic, "payload": dict(payload)}, separators=(",", ":"))
        self.run(lambda r: r.publish(self.key("bus"), message))

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` for every publish from now on, on every replica.

        Returns once the subscription is live (a publish after it is heard),
        or raises ``StoreUnavailableError`` if Redis does not answer in time.
        """
        self._subscribers.add(callback)
        self._start_listening()
        if not self._subscribed.wait(self.timeout):
            self._subscribers.remove(callback)
            raise self.unavailable(f"could not subscribe to its bus within {self.timeout:g} s")
        return lambda: self._subscribers.remove(callback)

    def _start_listening(self) -> None:
        with self._listen_lock:
            if self._listener is not None or self._closed:
                return
            self._dispatcher = threading.Thread(
                target=self._dispatch, name="presets-store-bus", daemon=True
            )
            self._dispatcher.start()
            self._listener = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)

    async def _listen(self) -> None:
        """Hold the subscription; when Redis goes away, subscribe again once it is back."""
        channel = self.key("bus")
        self._listen_task = asyncio.current_task()
        dropped = False
        while not self._closed:
            pubsub: PubSub = self.client.pubsub()
            try:
                await pubsub.subscribe(channel)
                # The confirmation is the first message: once read, publishes reach us.
                while True:
                    message = await pubsub.get_message(timeout=None)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._subscribed.set()
                        if dropped:
                            self._inbox.put((RECONNECTED, {}))
                            dropped = False
                    elif message["type"] == "message":
                        self._received(message["data"])
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                if self._subscribed.is_set():
                    log.warning(
                        "the store %s: its bus lost Redis (%s); subscribing again", self.url, exc
                    )
                self._subscribed.clear()
                dropped = True
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(RESUBSCRIBE_SECONDS)

    def _received(self, data: bytes) -> None:
        try:
            message = json.loads(data)
            topic, payload = message["topic"], message["payload"]
        except (ValueError, KeyError, TypeError):
            log.warning("the store %s: a bus message that is not ours was ignored", self.url)
            return
        if isinstance(topic, str) and isinstance(payload, dict):
            self._inbox.put((topic, payload))

    def _dispatch(self) -> None:
        while (item := self._inbox.get()) is not None:
            try:
                self._subscribers.notify(*item)
            except Exception:
                log.exception("a store subscriber failed on %r", item[0])

    # -- budget counters ---------------------------------------------------------

    def charge(
        self, counters: Sequence[tuple[str, int | None]], *, count: bool = True
    ) -> str | None:
        if not counters:
            return None
        hash_key = self.key("counters")
        if all(limit is None for _key, limit in counters):
            # Nothing can refuse the call: it need not wait for Redis. Its counts go out
            # behind it, gathered with other calls' into one round trip (``counts`` waits
            # for them), so a call without budgets costs no round trip on its way.
            if count:
                with self._sent:
                    for key, _limit in counters:
                        self._unsent[key] = self._unsent.get(key, 0) + 1
                    wake = not self._count_woken
                    self._count_woken = True
                if wake:
                    self._loop.call_soon_threadsafe(self._send_counts_soon)
            return None
        args: list[str] = ["1" if count else "0"]
        for key, limit in counters:
            args += [key, "" if limit is None else str(limit)]
        spent = self._gate_script()(keys=[hash_key], args=args)
        return None if spent is None else _text(spent)

    def _gate_script(self) -> Any:
        """The charge script on a blocking client, made on first use; its errors are the
        store's (``StoreUnavailableError`` when Redis does not answer)."""
        if self._closed:
            raise StoreUnavailableError(f"the store {self.url} is closed (the server is stopping)")
        if self._gate is None:
            import redis as redis_sync
            from redis.retry import Retry as SyncRetry

            client = redis_sync.Redis.from_url(
                self._connect_url,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                # As the loop's client: one quiet retry on a connection from before a restart.
                retry=SyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            )
            script = client.register_script(_CHARGE)

            def gate(*, keys: list[str], args: list[str]) -> Any:
                try:
                    return script(keys=keys, args=args)
                except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                    raise self.unavailable(str(exc) or type(exc).__name__) from exc
                except OutOfMemoryError as exc:
                    raise self.full() from exc

            self._gate = (client, gate)
        return self._gate[1]

    def counts(self, prefix: str = "") -> dict[str, int]:
        self.flush()
        values = self.run(lambda r: r.hgetall(self.key("counters")))
        found = {_text(k): int(v) for k, v in values.items()}
        return {k: v for k, v in found.items() if k.startswith(prefix)}

    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._inbox.put(None)

        async def shut() -> None:
            task = self._listen_task
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            await self.client.aclose()

        if self._gate is not None:
            with contextlib.suppress(Exception):
                self._gate[0].close()
        try:
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(self.timeout)
        except Exception as exc:  # closing a client of a Redis that is gone
            log.debug("closing the store %s: %s", self.url, exc)
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout)
        if not self._thread.is_alive():
            self._loop.close()


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
