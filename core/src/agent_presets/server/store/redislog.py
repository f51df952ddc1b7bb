"""The event log on Redis: one stream every replica appends to, with one unbroken hash chain.

Each entry of the stream ``PREFIX events`` holds one line (field ``line``),
byte for byte what the file log would write: the same JSON, the same
``prev`` (the ``line_hash`` of the line before), so ``verify_stream`` checks
it as ``verify_log`` checks a file. ``PREFIX events:last`` holds the last
link. Several replicas append at once, so a replica cannot know the last
link from memory: it appends with a compare-and-set (one Lua script: append
only if the last link is still the one its lines chain to, else answer the
link that is), and on a miss chains its lines to that link and tries again.

A call does not wait for its line: ``write`` queues it and returns, and the
store's loop appends what is queued, many lines per round trip, in the order
written. While Redis is away the lines wait in the queue (at most
``max_queued``; past that new lines are dropped and counted in a warning), and
go out when it is back. ``flush`` (and ``close``) wait until the queue is out.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from agent_presets.server.eventlog import (
    GENESIS,
    ChainBreak,
    Line,
    Verified,
    encode,
    line_hash,
)
from agent_presets.server.store.redishandle import LINGER

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from agent_presets.server.store.redishandle import RedisHandle

log = logging.getLogger("agent_presets.server.store")

MAX_LINES: Final = 200_000
"""Lines the stream keeps (about, trimmed as it grows); older ones leave, as rotated files do."""
MAX_QUEUED: Final = 100_000
"""Lines a replica holds while Redis is away; past that, new lines are dropped (and counted)."""
BATCH: Final = 500
"""Lines appended in one round trip at most."""
RETRY_SECONDS: Final = 0.25

# KEYS[1] the stream, KEYS[2] its last link. ARGV[1] the link the lines chain to,
# ARGV[2] the stream's length to keep, ARGV[3] the last line's hash, ARGV[4...] the lines.
# Returns {1, link} once appended, or {0, the last link} when another writer came first.
_APPEND: Final = f"""
local last = redis.call('GET', KEYS[2]) or '{GENESIS}'
if last ~= ARGV[1] then return {{0, last}} end
for i = 4, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'line', ARGV[i])
end
redis.call('SET', KEYS[2], ARGV[3])
return {{1, ARGV[3]}}
"""


class RedisEventLog:
    """The log's writer on one replica: ``write`` queues, the store's loop appends."""

    def __init__(
        self, store: RedisHandle, *, max_lines: int = MAX_LINES, max_queued: int = MAX_QUEUED
    ) -> None:
        self.store = store
        self.stream = store.key("events")
        self.last = store.key("events", "last")
        self.max_lines = max_lines
        self.max_queued = max_queued
        self._append = store.client.register_script(_APPEND)
        self._lock = threading.Lock()
        self._queue: collections.deque[Line] = collections.deque()
        self._idle = threading.Condition(self._lock)
        self._sending = 0
        self._dropped = 0
        self._woken = False
        self._closed = False
        self._prev: str | None = None  # the last link this replica appended, if known
        self._wake = asyncio.Event()
        self._task = asyncio.run_coroutine_threadsafe(self._drain(), store._loop)

    def write(self, event: Line) -> None:
        with self._lock:
            if self._closed:
                return
            if len(self._queue) >= self.max_queued:
                self._dropped += 1
                if self._dropped == 1 or self._dropped % 1000 == 0:
                    log.warning(
                        "the event log on %s: Redis is away and %d lines wait; %d new lines "
                        "were dropped",
                        self.store.url,
                        len(self._queue),
                        self._dropped,
                    )
                return
            self._queue.append(event)
            wake = not self._woken
            self._woken = True
        if wake:
            self.store._loop.call_soon_threadsafe(self._wake.set)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every line written so far is in Redis; False if ``timeout`` passed first."""
        wait = self.store.timeout if timeout is None else timeout
        with self._idle:
            return self._idle.wait_for(lambda: not self._queue and not self._sending, wait)

    def close(self) -> None:
        self.flush()
        with self._lock:
            self._closed = True
            left = len(self._queue)
        self._task.cancel()
        if left:
            log.warning(
                "the event log on %s: %d lines were not appended (Redis away)", self.store.url, left
            )

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(LINGER)  # let the lines meanwhile join the batch
            with self._lock:
                self._woken = False
            while True:
                with self._lock:
                    batch = [self._queue[i] for i in range(min(BATCH, len(self._queue)))]
                    self._sending = len(batch)
                if not batch:
                    break
                try:
                    await asyncio.wait_for(self._send(batch), self.store.timeout)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # Redis away: keep the lines, try again
                    log.debug("the event log on %s: %s; trying again", self.store.url, exc)
                    with self._idle:
                        self._sending = 0
                    self._prev = None
                    await asyncio.sleep(RETRY_SECONDS)
                    continue
                with self._idle:
                    for _ in batch:
                        self._queue.popleft()
                    self._sending = 0
                    self._idle.notify_all()

    async def _send(self, batch: list[Line]) -> None:
        client: aioredis.Redis = self.store.client
        prev = self._prev
        if prev is None:
            prev = _text(await client.get(self.last) or GENESIS)
        while True:
            lines, link = [], prev
            for event in batch:
                raw = encode(event, link)
                link = line_hash(raw)
                lines.append(raw)
            done, last = await self._append(
                keys=[self.stream, self.last],
                args=[prev, self.max_lines, link, *lines],
                client=client,
            )
            last = _text(last)
            # A retry of a script that did run (its answer lost) finds its own last link.
            if done or last == link:
                self._prev = link
                return
            prev = last


def _text(value: Any) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _entries(store: RedisHandle, chunk: int = 1000) -> Iterator[tuple[str, bytes]]:
    """``(entry id, line)`` of the stream, oldest first, read ``chunk`` at a time."""
    stream = store.key("events")
    start = "-"
    while True:

        async def page(r: aioredis.Redis, since: str = start) -> Any:
            return await r.xrange(stream, min=since, max="+", count=chunk)

        entries = store.run(page)
        for entry_id, fields in entries:
            yield _text(entry_id), fields.get(b"line", b"")
        if len(entries) < chunk:
            return
        start = "(" + _text(entries[-1][0])


def read_stream(store: RedisHandle) -> Iterator[dict[str, Any]]:
    """Every event in the stream, oldest first (lines that are not events are skipped)."""
    for _id, raw in _entries(store):
        event = _event(raw)
        if event is not None:
            yield event


def _event(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if isinstance(event, dict) and isinstance(event.get("v"), int):
        return event
    return None


def verify_stream(store: RedisHandle) -> Verified:
    """Follow the chain through the stream: each line's ``prev`` is the hash of the one before.

    The first line kept may link to a line trimmed away long ago, so the
    chain is checked from there on, as ``verify_log`` does with rotated files.
    A break is reported by the line's position (1-based) in the stream.

    The chain alone cannot show that its newest lines were cut, so the last
    link (``PREFIX events:last``) is read first and must name a line of the
    stream: one appended while this reads comes after it and changes nothing.
    """
    where = Path(store.key("events"))
    last_key = store.key("events", "last")
    last = store.run(lambda r: r.get(last_key))
    expected = None if last is None or _text(last) == GENESIS else _text(last)
    previous: str | None = None
    lines = 0
    seen_last = expected is None
    for number, (_id, raw) in enumerate(_entries(store), 1):
        event = _event(raw)
        if event is None:
            return Verified(lines, ChainBreak(where, number, "the entry is not an event line"), 0)
        prev = event.get("prev")
        if not isinstance(prev, str):
            return Verified(
                lines, ChainBreak(where, number, "the line has no link (prev) to the one before"), 0
            )
        if previous is not None and prev != previous:
            return Verified(
                lines + 1,
                ChainBreak(
                    where,
                    number,
                    "a line before it was removed or altered (or this line's link was)",
                ),
                0,
            )
        previous = line_hash(raw)
        seen_last = seen_last or previous == expected
        lines += 1
    if not seen_last:
        problem = (
            f"the stream ends after line {lines}, but its last link ({last_key}) names a line "
            "that is not in it: the newest lines were removed (or that key was altered)"
        )
        return Verified(lines, ChainBreak(where, lines + 1, problem), 0)
    return Verified(lines, None, 0)
