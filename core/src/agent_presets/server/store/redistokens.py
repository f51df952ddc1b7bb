"""The token table on Redis: one table for every replica, written by ``presets tokens --store``.

The table is the token file's own JSON, kept whole in ``PREFIX tokens``, so
a record reads and checks the same wherever it lives. A writer changes it by
compare-and-set (one Lua script: replace the table only if it is still the
one the change was made to, and tell the bus), and on a miss reads it again
and re-applies the change, so two writers never lose each other's token.

A server reads the table at most every ``reload`` seconds, and at once when
the bus says it changed, so a request costs no round trip: a revocation is
honoured from the next request after the bus carries it (at most ``reload``
seconds if the message was lost). While Redis is away a server keeps the
table it read last; no revocation can be written meanwhile either.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from agent_presets.server.store.base import StoreUnavailableError
from agent_presets.server.tokens import (
    FILE_VERSION,
    RELOAD_SECONDS,
    TokenError,
    TokenRecord,
    TokenStore,
    TokenTable,
    parse_tokens,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from agent_presets.server.store.redishandle import RedisHandle

T = TypeVar("T")

TOPIC: Final = "tokens"
"""The bus topic a change of the table is published on (payload ``{}``)."""
ATTEMPTS: Final = 20

# KEYS[1] the table; ARGV[1] the table the change was made to ("" for none), ARGV[2] the
# new table, ARGV[3] the bus channel, ARGV[4] the bus message. 1 if replaced, 0 if not.
_REPLACE: Final = """
local now = redis.call('GET', KEYS[1]) or ''
if now ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
"""


def _text(value: Any) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value


class RedisTokenStore(TokenStore):
    """``presets tokens create|list|revoke --store redis://...``: the shared table."""

    def __init__(self, store: RedisHandle) -> None:
        self.store = store
        self.key = store.key("tokens")
        self.where = f"{store.url} (key {self.key})"
        self._replace = store.client.register_script(_REPLACE)

    def list(self) -> list[TokenRecord]:
        text = self._read()
        records = parse_tokens(text, self.where) if text is not None else {}
        return sorted(records.values(), key=lambda r: r.name)

    def _read(self) -> str | None:
        return _text(self.store.run(lambda r: r.get(self.key)))

    def _modify(self, change: Callable[[dict[str, TokenRecord]], T]) -> T:
        message = json.dumps({"topic": TOPIC, "payload": {}})
        for _ in range(ATTEMPTS):
            text = self._read()
            records = parse_tokens(text, self.where) if text is not None else {}
            result = change(records)
            data = {"version": FILE_VERSION, "tokens": [r.to_json() for r in records.values()]}
            new = json.dumps(data, indent=1, sort_keys=True) + "\n"

            async def replace(r: aioredis.Redis, old: str = text or "", new: str = new) -> Any:
                args = [old, new, self.store.key("bus"), message]
                return await self._replace(keys=[self.key], args=args, client=r)

            if self.store.run(replace) == 1:
                return result
        raise TokenError(
            f"the token table at {self.where} changed {ATTEMPTS} times while this change "
            "was made; try again"
        )


class RedisTokenTable(TokenTable):
    """The server's view of the shared table: re-read on the bus's word, or every ``reload``."""

    def __init__(self, store: RedisHandle, *, reload: float = RELOAD_SECONDS) -> None:
        self.store = store
        self.key = store.key("tokens")
        self._stale = threading.Event()
        self._stale.set()
        self._reading = False
        self._taken = 0
        self._unsubscribe = store.subscribe(self._heard)
        super().__init__("", reload=reload)  # the file's path is unused
        self.where = f"{store.url} (key {self.key})"

    def _heard(self, topic: str, payload: Mapping[str, Any]) -> None:
        if topic in (TOPIC, "store.reconnected"):
            self._stale.set()

    def refresh(self) -> None:
        now = time.monotonic()
        stale = self._stale.is_set()
        if not stale and now - self._read_at < self.reload:
            return
        if not stale and self._read_at > float("-inf"):
            # Only the periodic look, no change heard of: the request goes on with the
            # table read last, and the table is read behind it. A call then waits for
            # Redis once at most (its budget), not twice, while Redis does not answer.
            self._read_at = now
            self._read_behind()
            return
        with self._lock:
            self._stale.clear()
            try:
                text = _text(self.store.run(lambda r: r.get(self.key)))
            except StoreUnavailableError:
                self._read_at = now  # keep what was read last; ask again after ``reload``
                return
            self._read_at = now
            self._taken += 1
            self._take(text)

    def _read_behind(self) -> None:
        """Read the table on the store's loop without waiting; take it if Redis answers."""
        if self._reading:
            return
        self._reading = True
        taken = self._taken

        async def read() -> Any:
            return await asyncio.wait_for(self.store.client.get(self.key), self.store.timeout)

        def done(future: concurrent.futures.Future[Any]) -> None:
            self._reading = False
            if future.cancelled() or future.exception() is not None:
                return
            with self._lock:
                if self._taken == taken:  # else a read since (a change heard of) is newer
                    self._take(_text(future.result()))

        asyncio.run_coroutine_threadsafe(read(), self.store._loop).add_done_callback(done)

    def close(self) -> None:
        self._unsubscribe()
