"""Pending requests on Redis: one queue for every replica, each request decided once.

``SharedRequestStore`` keeps ``RequestStore``'s promises (bounded, expiring,
decided once, bound to its call) across replicas:

- ``PREFIX requests`` (a hash, id -> the request's JSON) holds what waits;
  ids come from ``PREFIX request-ids`` (``r1``, ``r2`` ... for the whole
  deployment). Filing (with the merge of a repeated override request and the
  ``max_pending`` bound) is one Lua script.
- Deciding is one Lua script that takes the request out and keeps its outcome
  under ``PREFIX decision:ID`` for an hour: whoever takes it decides, so an
  approval through any replica (or ``presets approve --store`` with no server
  at all) decides it once, and a second decision is ``UnknownRequestError``.
- The decision goes out on the bus (topic ``request``): the replica whose call
  waits on the request resolves its future, and the call runs once. Should
  that message be lost (Redis away for a moment), the waiting call's own
  timeout finds the kept outcome instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from agent_presets.lib.principal import LOCAL
from agent_presets.server.requests import (
    DEFAULT_TTL,
    MAX_PENDING,
    MAX_PER_PRINCIPAL,
    MAX_REASON,
    Kind,
    PendingRequest,
    RequestLimitError,
    RequestStore,
    call_digest,
    limit_message,
)

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from agent_presets.server.events import Event, Outcome, State
    from agent_presets.server.store.redishandle import RedisHandle

TOPIC: Final = "request"
"""The bus topic of a filed or decided request: ``{"id", "outcome"}`` (None when filed)."""
DECISION_TTL: Final = 3600
"""Seconds a decision is kept after its request left, for a replica that missed the bus."""

# KEYS: the requests hash, the id counter. ARGV: the request's JSON object (without id), its
# merge key ("" never merges), now, max_pending, max_per_principal. Returns {"new", id, json},
# {"merged", id, json}, {"full", count, soonest expiry} or {"full-principal", count, soonest}.
_FILE: Final = """
local new = cjson.decode(ARGV[1])
local now = tonumber(ARGV[3])
local count, soonest = 0, nil
local theirs, their_soonest = 0, nil
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local r = cjson.decode(raw)
  if r.expires > now then
    count = count + 1
    if soonest == nil or r.expires < soonest then soonest = r.expires end
    if r.principal == new.principal then
      theirs = theirs + 1
      if their_soonest == nil or r.expires < their_soonest then their_soonest = r.expires end
    end
    if ARGV[2] ~= '' and r.merge == ARGV[2] then
      -- Only an override merges: it has no arguments, so re-encoding it changes nothing.
      -- Its expiry stays: asking again does not renew it.
      r.reason = new.reason
      local text = cjson.encode(r)
      redis.call('HSET', KEYS[1], r.id, text)
      return {'merged', r.id, text}
    end
  end
end
if theirs >= tonumber(ARGV[5]) then
  return {'full-principal', theirs, tostring(their_soonest)}
end
if count >= tonumber(ARGV[4]) then return {'full', count, tostring(soonest)} end
local id = 'r' .. redis.call('INCR', KEYS[2])
-- Spliced, not re-encoded: cjson would rewrite a call's arguments ({} as [], big integers
-- as floats), and the person must read the arguments that run.
local text = '{"id":"' .. id .. '",' .. string.sub(ARGV[1], 2)
redis.call('HSET', KEYS[1], id, text)
return {'new', id, text}
"""

# KEYS: the requests hash. ARGV: the id, the outcome, the decision key, its TTL.
# Returns the request's JSON once taken, else nil.
_DECIDE: Final = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SET', ARGV[3], ARGV[2], 'EX', ARGV[4])
return raw
"""

# KEYS: the requests hash. ARGV: now, the decision key's prefix, its TTL.
# Takes every request past its expiry; returns their JSON.
_EXPIRE: Final = """
local gone = {}
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  local r = cjson.decode(raw)
  if r.expires <= tonumber(ARGV[1]) then
    redis.call('HDEL', KEYS[1], r.id)
    redis.call('SET', ARGV[2] .. r.id, 'expired', 'EX', ARGV[3])
    table.insert(gone, raw)
  end
end
return gone
"""


def _dump(request: PendingRequest) -> dict[str, Any]:
    key = request.merge_key
    return {
        "id": request.id,
        "kind": request.kind,
        "reason": request.reason,
        "created": request.created,
        "expires": request.expires,
        "preset": request.preset,
        "state": request.state,
        "tool": request.tool,
        "arguments": None if request.arguments is None else dict(request.arguments),
        "digest": request.digest,
        "principal": request.principal,
        "merge": "\0".join(key) if key is not None else "",
    }


def _load(raw: Any) -> PendingRequest:
    data = json.loads(raw)
    # cjson writes an empty object as an empty array.
    arguments = data.get("arguments")
    return PendingRequest(
        id=str(data["id"]),
        kind=cast("Kind", data["kind"]),
        reason=str(data.get("reason") or ""),
        created=float(data["created"]),
        expires=float(data["expires"]),
        preset=data.get("preset"),
        state=data.get("state"),
        tool=data.get("tool"),
        arguments=None if arguments is None else dict(arguments or {}),
        digest=data.get("digest"),
        principal=data.get("principal") or LOCAL,
    )


class SharedRequestStore(RequestStore):
    """The requests every replica shares (module docstring); ``RequestStore``'s interface."""

    def __init__(
        self,
        store: RedisHandle,
        *,
        ttl: float = DEFAULT_TTL,
        max_pending: int = MAX_PENDING,
        max_per_principal: int = MAX_PER_PRINCIPAL,
        emit: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            ttl=ttl,
            max_pending=max_pending,
            max_per_principal=max_per_principal,
            emit=emit,
            clock=clock,
        )
        self.store = store
        self._hash = store.key("requests")
        self._counter = store.key("request-ids")
        self._decisions = store.key("decision") + ":"
        self._file = store.client.register_script(_FILE)
        self._take = store.client.register_script(_DECIDE)
        self._expire = store.client.register_script(_EXPIRE)
        self._local: dict[str, PendingRequest] = {}
        """Requests filed here (a call here awaits each one's future), until decided."""
        self._local_lock = threading.Lock()
        self._unsubscribe: Callable[[], None] | None = None

    def listen(self) -> SharedRequestStore:
        """Hear decisions made elsewhere (a server calls it; a command line need not)."""
        if self._unsubscribe is None:
            self._unsubscribe = self.store.subscribe(self._heard)
        return self

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    # -- filing --------------------------------------------------------------

    def file(
        self,
        kind: Kind,
        *,
        reason: str,
        preset: str | None = None,
        state: State | None = None,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        ttl: float | None = None,
        principal: str = LOCAL,
    ) -> tuple[PendingRequest, bool]:
        now = self._clock()
        expires = now + (self.ttl if ttl is None else ttl)
        probe = PendingRequest(
            "", kind, reason[:MAX_REASON], now, expires, preset, state, tool, principal=principal
        )
        if kind == "call":
            probe.arguments = dict(arguments or {})
            probe.digest = call_digest(tool or "", probe.arguments)
        data = _dump(probe)
        del data["id"]
        text = json.dumps(data, separators=(",", ":"))

        async def file(r: aioredis.Redis) -> Any:
            args = [text, data["merge"], repr(now), self.max_pending, self.max_per_principal]
            return await self._file(keys=[self._hash, self._counter], args=args, client=r)

        self.expire()
        answer = self.store.run(file)
        what = _text(answer[0])
        if what in ("full", "full-principal"):
            soonest = float(answer[2])
            raise RequestLimitError(
                limit_message(int(answer[1]), what == "full-principal", soonest - now)
            )
        request_id = _text(answer[1])
        merged = what == "merged"
        with self._local_lock:
            request = self._local.get(request_id)
            if request is None:
                request = _load(answer[2])
                self._local[request_id] = request
            else:
                request.reason = probe.reason
        if not merged:
            from agent_presets.server.events import Request

            self._write(Request(id=request.id, asks=kind, preset=preset, state=state, tool=tool))
        self.store.publish(TOPIC, {"id": request.id, "outcome": None})
        self._listeners.notify()
        return request, merged

    # -- reading -------------------------------------------------------------

    def pending(self) -> list[PendingRequest]:
        self.expire()
        found = self.store.run(lambda r: r.hvals(self._hash))
        requests = [self._ours(_load(raw)) for raw in found]
        return sorted(requests, key=lambda r: (r.created, int(r.id[1:])))

    def get(self, request_id: str) -> PendingRequest:
        self.expire()
        raw = self.store.run(lambda r: r.hget(self._hash, request_id))
        if raw is not None:
            return self._ours(_load(raw))
        from agent_presets.lib.suggest import did_you_mean
        from agent_presets.server.requests import UnknownRequestError

        known = [_text(k) for k in self.store.run(lambda r: r.hkeys(self._hash))]
        hint = did_you_mean(request_id, known, "`presets requests` lists the pending ones")
        raise UnknownRequestError(
            f"no pending request {request_id!r}: it was decided already, expired, or never "
            f"filed{hint}"
        )

    def __len__(self) -> int:
        count: int = self.store.run(lambda r: r.hlen(self._hash))
        return count

    def next_expiry(self) -> float | None:
        with self._local_lock:
            return min((r.expires for r in self._local.values()), default=None)

    def _ours(self, request: PendingRequest) -> PendingRequest:
        """The request filed here (whose future a call awaits), else the one read."""
        with self._local_lock:
            return self._local.get(request.id, request)

    # -- deciding ------------------------------------------------------------

    def decide(self, request_id: str, outcome: Outcome, *, by: str) -> PendingRequest:
        """Take ``request_id`` out with ``outcome`` (whichever replica holds its call)."""

        async def take(r: aioredis.Redis) -> Any:
            args: list[str | int] = [
                request_id,
                outcome,
                self._decisions + request_id,
                DECISION_TTL,
            ]
            return await self._take(keys=[self._hash], args=args, client=r)

        raw = self.store.run(take)
        if raw is None:
            self._settle_from_kept(request_id)
            self.get(request_id)  # raises the error with its hint
            raise AssertionError("unreachable")  # pragma: no cover
        request = self._ours(_load(raw))
        self._resolve(request, outcome, by)
        self.store.publish(TOPIC, {"id": request.id, "outcome": outcome})
        self._listeners.notify()
        return request

    def expire(self) -> list[PendingRequest]:
        now = self._clock()

        async def take(r: aioredis.Redis) -> Any:
            args: list[str | int] = [repr(now), self._decisions, DECISION_TTL]
            return await self._expire(keys=[self._hash], args=args, client=r)

        expired = [self._ours(_load(raw)) for raw in self.store.run(take)]
        for request in expired:
            self._resolve(request, "expired", "timeout")
            self.store.publish(TOPIC, {"id": request.id, "outcome": "expired"})
        if expired:
            self._listeners.notify()
        return expired

    def _resolve(self, request: PendingRequest, outcome: Outcome, by: str) -> None:
        with self._local_lock:
            self._local.pop(request.id, None)
        super()._resolve(request, outcome, by)

    def _heard(self, topic: str, payload: Mapping[str, Any]) -> None:
        if topic == "store.reconnected":
            with self._local_lock:
                waiting = list(self._local)
            for request_id in waiting:
                self._settle_from_kept(request_id)
            self._listeners.notify()
            return
        if topic != TOPIC:
            return
        outcome, rid = payload.get("outcome"), payload.get("id")
        if isinstance(outcome, str) and isinstance(rid, str):
            self._settle(rid, cast("Outcome", outcome))
        self._listeners.notify()

    def _settle(self, request_id: str, outcome: Outcome) -> None:
        """Resolve the future of a request filed here that another process decided."""
        with self._local_lock:
            request = self._local.pop(request_id, None)
        if request is not None and not request.outcome.done():
            request.outcome.set_result(outcome)

    def _settle_from_kept(self, request_id: str) -> None:
        """A request filed here left the store: settle it from the decision kept for it."""
        with self._local_lock:
            if request_id not in self._local:
                return

        async def look(r: aioredis.Redis) -> Any:
            async with r.pipeline(transaction=True) as pipe:
                pipe.hexists(self._hash, request_id)
                pipe.get(self._decisions + request_id)
                return await pipe.execute()

        waiting, kept = self.store.run(look)
        if waiting:
            return  # still pending: nobody decided it
        outcome = kept.decode() if isinstance(kept, bytes) else "expired"
        self._settle(request_id, cast("Outcome", outcome))


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
