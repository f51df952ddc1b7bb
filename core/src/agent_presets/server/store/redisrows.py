"""Runtime tables on Redis: one hash per (runtime, world), shared by every replica.

``presets serve --store redis://HOST:PORT/DB`` keeps the headless host's
runtime tables here instead of the state directory's SQLite database, so
several replicas write one drawing, graph or scene. Each table is two keys:

- ``presets:rows:<runtime>:<world>``, a hash: field = row key, value = JSON;
- ``presets:rows-meta:<runtime>:<world>``, a hash: ``v``, the version, raised by
  every commit; ``t``, the token of the last commit.

A transaction buffers its writes (its own reads see them) and commits them in
one Lua script, which Redis runs atomically: the writes apply only if the
version is still the one this table last saw (its ``snapshot()`` or its own
last commit), else nothing is written and ``RowConflict`` is raised
(optimistic concurrency; ``agent_presets.lib.rows.TableSync`` reloads and runs the
operation again). The token makes a commit idempotent: when the reply is lost
and the client sends the script again, it finds its own token and reports the
commit done instead of applying it twice (or calling it a conflict).

The client is the synchronous ``redis.Redis``: tables are called from the tool
handlers' worker threads, never from the event loop, and their callers (the
runtimes) are synchronous, so the asyncio client would need a loop thread and
a hand-off per call for nothing. Its connection pool is thread-safe. Every
command is bounded (``TIMEOUT`` to connect and to answer, ``RETRIES`` retries):
Redis down or unreachable raises ``TablesUnavailableError``, a
``ToolCallError``, so the tool call gets an error result saying so, never a
hang or a traceback.

Durability is Redis's: with ``appendonly yes`` and ``appendfsync always`` a
commit is on disk before its reply, so an acknowledged call survives Redis
and any replica being killed (``docs/store.md``).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

from agent_presets.lib.model import PresetError, ToolCallError
from agent_presets.lib.rows import RowConflict
from agent_presets.server.store.nesting import NestedTransaction

if TYPE_CHECKING:
    import redis

PREFIX: Final = "presets:rows"
TIMEOUT: Final = 2.0
"""Seconds to connect, and to wait for one reply, before Redis counts as unavailable."""
RETRIES: Final = 1
"""Retries of a command whose connection broke (Redis restarted): the commit token makes
them safe."""

COMMIT: Final = """
local v = tonumber(redis.call('HGET', KEYS[2], 'v') or '0')
if redis.call('HGET', KEYS[2], 't') == ARGV[2] then return {1, v} end
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= v then return {0, v} end
if ARGV[3] == '1' then redis.call('DEL', KEYS[1]) end
local i = 4
while i <= #ARGV do
  if ARGV[i] == 'p' then
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  else
    redis.call('HDEL', KEYS[1], ARGV[i + 1])
    i = i + 2
  end
end
v = redis.call('HINCRBY', KEYS[2], 'v', 1)
redis.call('HSET', KEYS[2], 't', ARGV[2])
return {1, v}
"""
"""KEYS: rows, meta. ARGV: expected version ('' for any), token, '1' to clear first, then
the writes in order: ``p KEY JSON`` or ``d KEY``. Returns ``{committed, version}``."""

_GONE: Final = object()
T = TypeVar("T")


class TablesUnavailableError(ToolCallError):
    """Redis, where the runtime tables are, did not answer in time."""


def public_url(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisRows:
    """The runtime tables of a deployment, on the Redis at ``url`` (``redis://HOST:PORT/DB``).

    Offers what the host asks of its ``StateStore``: ``table``, ``drop_world``
    and ``close``. Connecting is lazy: a Redis that is down at start makes the
    first call that needs a table fail with ``TablesUnavailableError``, and the
    next one after Redis is back succeed.
    """

    def __init__(self, url: str) -> None:
        try:
            import redis
            from redis.backoff import ExponentialBackoff
            from redis.retry import Retry
        except ImportError:
            raise PresetError(
                f"--store {public_url(url)!r} needs the redis client: install agent-presets[redis]"
            ) from None

        self.url = public_url(url)
        try:
            self.client: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=TIMEOUT,
                socket_connect_timeout=TIMEOUT,
                retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), RETRIES),
            )
        except ValueError as exc:
            raise PresetError(
                f"--store {self.url!r} is not a store this server knows ({exc}): use "
                "embedded (the default) or redis://HOST:PORT/DB"
            ) from None
        self._commit = self.client.register_script(COMMIT)

    def table(self, runtime: str, world: str) -> RedisTable:
        """The rows of one runtime in one world."""
        return RedisTable(self, runtime, world)

    def drop_world(self, world: str) -> None:
        """Delete every runtime's rows of ``world``; their versions go on rising."""
        pattern = f"{PREFIX}:*:{world}"
        keys = self.call(lambda: list(self.client.scan_iter(match=pattern, count=500)))
        for key in keys:
            runtime = key.decode().split(":")[2]
            self.table(runtime, world).clear()

    def close(self) -> None:
        self.client.close()

    def call(self, command: Callable[[], T]) -> T:
        """Run one exchange with Redis; its failure is a ``TablesUnavailableError``."""
        import redis

        try:
            return command()
        except redis.exceptions.RedisError as exc:
            raise TablesUnavailableError(
                f"Redis at {self.url}, where the app's state is kept, is unavailable "
                f"({type(exc).__name__}: {exc}), so the call did not complete. Try again "
                "in a moment; if it was a change, look first whether it was saved"
            ) from None


class RedisTable:
    """One runtime's rows in one world, on Redis (see the module docstring).

    Same contract as ``agent_presets.host.Table``: writes outside
    ``transaction()`` commit one by one, transactions nest (the outermost one
    commits), and an exception inside rolls every write back (nothing is sent).
    """

    def __init__(self, rows: RedisRows, runtime: str, world: str) -> None:
        self.rows = rows
        self.runtime = runtime
        self.world = world
        self.key = f"{PREFIX}:{runtime}:{world}"
        self.meta = f"{PREFIX}-meta:{runtime}:{world}"
        self._lock = threading.RLock()
        self._nested = NestedTransaction(self._lock, commit=self._commit, rollback=self._reset)
        self._pending: dict[str, object] = {}  # key -> JSON text, or _GONE for a delete
        self._cleared = False
        self._seen: int | None = None
        """The version this table's runtime holds (None: it never took a snapshot)."""

    # -- reading -------------------------------------------------------------

    def _committed(self) -> dict[str, Any]:
        raw: dict[bytes, bytes] = self.rows.call(lambda: self.rows.client.hgetall(self.key))  # type: ignore[arg-type, return-value]
        return {key.decode(): json.loads(value) for key, value in raw.items()}

    def _view(self) -> dict[str, Any]:
        """The rows as this table's transaction sees them: committed, then its own writes."""
        rows = {} if self._cleared else self._committed()
        for key, value in self._pending.items():
            if value is _GONE:
                rows.pop(key, None)
            else:
                rows[key] = json.loads(str(value))
        return rows

    def get(self, key: str, default: Any = None) -> Any:
        with self._lock:
            if key in self._pending:
                value = self._pending[key]
                return default if value is _GONE else json.loads(str(value))
            if self._cleared:
                return default
            raw = self.rows.call(lambda: self.rows.client.hget(self.key, key))
            return default if raw is None else json.loads(raw)

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        with self._lock:
            return sorted((k, v) for k, v in self._view().items() if k.startswith(prefix))

    def keys(self, prefix: str = "") -> list[str]:
        return [key for key, _ in self.items(prefix)]

    def is_empty(self) -> bool:
        return not self.items()

    def snapshot(self) -> list[tuple[str, Any]]:
        with self._lock:

            def read() -> list[Any]:
                pipe = self.rows.client.pipeline(transaction=True)
                pipe.hgetall(self.key)
                pipe.hget(self.meta, "v")
                return pipe.execute()

            raw, version = self.rows.call(read)
            self._seen = int(version or 0)
            return sorted((key.decode(), json.loads(value)) for key, value in raw.items())

    def stale(self) -> bool:
        with self._lock:
            if self._seen is None:
                return False
            seen = self._seen
        version = self.rows.call(lambda: self.rows.client.hget(self.meta, "v"))
        return int(version or 0) != seen

    # -- writing -------------------------------------------------------------

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (anything ``json.dumps`` takes) under ``key``, replacing any."""
        text = json.dumps(value, separators=(",", ":"))
        with self.transaction():
            self._pending[key] = text

    def delete(self, key: str) -> None:
        with self.transaction():
            self._pending[key] = _GONE

    def clear(self) -> None:
        with self.transaction():
            self._pending.clear()
            self._cleared = True

    def transaction(self) -> AbstractContextManager[None]:
        return self._nested()

    def _commit(self) -> None:
        try:
            self._flush()
        finally:
            self._reset()

    def _reset(self) -> None:
        self._pending = {}
        self._cleared = False

    def _flush(self) -> None:
        if not self._pending and not self._cleared:
            return
        args: list[str] = ["" if self._seen is None else str(self._seen), uuid.uuid4().hex]
        args.append("1" if self._cleared else "0")
        for key, value in self._pending.items():
            if value is _GONE:
                args += ["d", key]
            else:
                args += ["p", key, str(value)]
        committed, version = self.rows.call(
            lambda: self.rows._commit(keys=[self.key, self.meta], args=args)
        )
        if not committed:
            raise RowConflict(
                f"rows of {self.runtime!r} in world {self.world!r} changed since they were "
                f"read (version {self._seen}, now {version})"
            )
        if self._seen is not None:
            self._seen = int(version)
