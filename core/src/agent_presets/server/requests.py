"""Pending requests: what the agent asked for that waits for a person.

Two kinds share one store, so ``presets requests`` and the console show and
decide them alike: ``override`` (the agent asks for a preset to be turned on)
and ``call`` (a risky tool call waits for confirmation). Each request carries a
``concurrent.futures.Future`` that resolves to its outcome (``approved``,
``denied``, ``expired`` or ``withdrawn``): a call awaits it on the event loop
(``asyncio.wrap_future``) or blocks on it in a thread, whoever decides it.

What the store promises:

- *Bounded, and fair.* At most ``max_pending`` requests wait at once, and
  at most ``max_per_principal`` of one principal's: one more is refused
  with a message the agent can act on, so one principal filling its share
  leaves room for everyone else's. A repeated override request for the same
  change merges into the waiting one (same id, reason updated), so an agent
  that asks twice does not fill the store.
- *Expiring.* A request expires ``ttl`` seconds after it was first asked
  for: asking again does not renew it, so no request holds its slot for
  longer by being asked for over and over. Expired requests are dropped
  (and their futures resolved) on every access and by ``expire()``, which a
  server calls now and then.
- *Decided once.* A request leaves the store when it is decided; a second
  decision on the same id is an ``UnknownRequestError``, so a later approval of
  a withdrawn call runs nothing.
- *Bound to its call.* A ``call`` request keeps the call's full arguments
  and ``digest``, the sha256 of its tool and canonical arguments
  (``call_digest``): the person reads every argument, and an approval that
  names the digest it was shown (``presets approve ID --digest``) approves
  that call or nothing.
- *No agent text in the log.* The reason and arguments live on the request
  only; the ``request`` and ``decision`` events name the id, kind, preset and
  tool.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

from agent_presets.lib.listeners import Listeners
from agent_presets.lib.model import PresetError, ToolCallError
from agent_presets.lib.principal import LOCAL
from agent_presets.lib.safetext import shown, shown_arguments, shown_value
from agent_presets.lib.suggest import did_you_mean

if TYPE_CHECKING:
    # The event classes load with the first line written, not with the server.
    from agent_presets.server.events import Event, Outcome, State

Kind = Literal["override", "call"]

DEFAULT_TTL: Final = 600.0
"""Seconds a request waits for a person before it expires (10 minutes)."""
MAX_PENDING: Final = 20
MAX_PER_PRINCIPAL: Final = 5
"""Requests one principal may have waiting at once (of ``MAX_PENDING`` in all)."""
MAX_REASON: Final = 500
"""Longest reason (characters) kept with a request; the tool's schema enforces it."""
MIN_DIGEST: Final = 16
"""Hex digits of a call's digest that ``presets requests`` shows and an approval must give."""


class RequestLimitError(ToolCallError):
    """Too many requests wait already; the new one was not filed."""


def limit_message(waiting: int, of_principal: bool, soonest_in: float) -> str:
    """What an agent reads when its request is refused for the caps (either store's)."""
    whose = (
        "of yours already wait for the user, the most one caller may have"
        if of_principal
        else "already wait for the user, the most this server keeps"
    )
    return (
        f"{waiting} requests {whose}; do not ask again now. Carry on with the tools you "
        "have, or tell the user what you need; the oldest of them expires in "
        f"{_minutes(soonest_in)}."
    )


class UnknownRequestError(PresetError, LookupError):
    """No pending request has this id (never filed, decided already, or expired)."""


class DigestMismatchError(PresetError):
    """An approval named a digest that is not the waiting call's: it approved nothing."""


def call_digest(tool: str, arguments: Mapping[str, Any]) -> str:
    """The sha256 (hex) of ``tool`` and its arguments in canonical JSON.

    Canonical: keys sorted, no spaces, ASCII only, so equal calls have one
    digest whatever order or spelling their JSON arrived in.
    """
    canonical = json.dumps(
        {"tool": tool, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def iso_utc(ts: float) -> str:
    """``2026-11-30T15:30:00Z``: how requests show their times."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(eq=False)
class PendingRequest:
    """One request that waits for a person; ``outcome`` resolves when it is decided."""

    id: str
    kind: Kind
    reason: str
    created: float
    expires: float
    preset: str | None = None
    state: State | None = None
    """For an override: the state asked for (``on``)."""
    tool: str | None = None
    """For a call: the MCP name of the tool waiting to run."""
    arguments: Mapping[str, Any] | None = None
    """For a call: its arguments, in full, as they will run."""
    digest: str | None = None
    """For a call: ``call_digest(tool, arguments)``."""
    principal: str = LOCAL
    """Who asked; an approved override is set for this principal."""
    outcome: Future[Outcome] = field(default_factory=Future, repr=False)

    @property
    def merge_key(self) -> tuple[str, ...] | None:
        """Requests with one key are the same change; a call never merges with another."""
        if self.kind == "override":
            return ("override", self.principal, self.preset or "", self.state or "")
        return None

    def to_json(self) -> dict[str, Any]:
        """The object ``presets requests --json`` and the console show."""
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "principal": self.principal,
            "preset": self.preset,
        }
        if self.kind == "override":
            data["state"] = self.state
        else:
            data.update(tool=self.tool, arguments=dict(self.arguments or {}), digest=self.digest)
        if self.principal is not None:
            data["principal"] = self.principal
        data.update(
            reason=self.reason, created=iso_utc(self.created), expires=iso_utc(self.expires)
        )
        return data


def shown_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """What a person reads of one request (``PendingRequest.to_json``'s object).

    Every word an agent could have chosen is safe text (``safetext.shown``):
    ``id``, ``asks`` (the tool, or the state), ``what`` (``run TOOL`` or
    ``turn on PRESET``), ``preset``,
    ``summary`` (one line, long arguments clipped) and ``clipped``, and for a
    call ``arguments`` (``[[name, value], ...]``, every value in full) and
    ``digest``; for an override ``reason``. ``presets requests`` and the
    console both show this, so a terminal and a page read the same.
    """
    kind = data.get("kind")
    reason = shown(str(data.get("reason") or ""))
    out: dict[str, Any] = {
        "id": shown(str(data.get("id"))),
        "kind": kind,
        "preset": shown(str(data["preset"])) if data.get("preset") else None,
        "expires": shown(str(data.get("expires"))),
    }
    arguments = data.get("arguments")
    if kind == "call" and isinstance(arguments, Mapping):
        tool = shown(str(data.get("tool")))
        summary, clipped = shown_arguments(arguments)
        out.update(
            asks=tool,
            what=f"run {tool}",
            summary=f"{tool}({summary})",
            clipped=clipped,
            arguments=[[shown(str(k)), shown_value(v)] for k, v in arguments.items()],
            digest=data.get("digest"),
        )
    else:
        state = shown(str(data.get("state")))
        out.update(
            asks=state,
            what=f"turn {state} {out['preset']}",
            summary=reason,
            clipped=False,
            reason=reason,
        )
    return out


Listener = Callable[[], None]


class RequestStore:
    """The pending requests of one server. Thread-safe.

    ``emit`` receives the ``request`` and ``decision`` events (a server passes
    ``ToolPolicy.emit``). Listeners hear, with no arguments, whenever the set
    of pending requests changes (a console refreshes its list then).
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_TTL,
        max_pending: int = MAX_PENDING,
        max_per_principal: int = MAX_PER_PRINCIPAL,
        emit: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, got {ttl}")
        if max_pending < 1:
            raise ValueError(f"max_pending must be at least 1, got {max_pending}")
        if max_per_principal < 1:
            raise ValueError(f"max_per_principal must be at least 1, got {max_per_principal}")
        self.ttl = ttl
        self.max_pending = max_pending
        self.max_per_principal = max_per_principal
        self._emit = emit
        self._clock = clock
        self._lock = threading.RLock()
        self._pending: dict[str, PendingRequest] = {}
        self._ids = itertools.count(1)
        self._listeners: Listeners[Listener] = Listeners()

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
        """File a request, or merge it into the waiting one for the same change.

        Returns the request and whether it merged. Raises ``RequestLimitError``
        when ``max_pending`` requests wait already.
        """
        now = self._clock()
        expires = now + (self.ttl if ttl is None else ttl)
        reason = reason[:MAX_REASON]
        probe = PendingRequest(
            "", kind, reason, now, expires, preset, state, tool, principal=principal
        )
        if kind == "call":
            probe.arguments = dict(arguments or {})
            probe.digest = call_digest(tool or "", probe.arguments)
        with self._lock:
            expired = self._take_expired(now)
            key = probe.merge_key
            same = next(
                (r for r in self._pending.values() if key is not None and r.merge_key == key),
                None,
            )
            theirs = [r for r in self._pending.values() if r.principal == principal]
            if same is not None:
                same.reason = reason  # its expiry stays: asking again does not renew it
                request, merged = same, True
            elif len(theirs) >= self.max_per_principal:
                soonest = min(r.expires for r in theirs)
                raise RequestLimitError(limit_message(len(theirs), True, soonest - now))
            elif len(self._pending) >= self.max_pending:
                soonest = min(r.expires for r in self._pending.values())
                raise RequestLimitError(limit_message(len(self._pending), False, soonest - now))
            else:
                probe.id = f"r{next(self._ids)}"
                self._pending[probe.id] = probe
                request, merged = probe, False
        self._finish_expired(expired)
        if not merged:
            from agent_presets.server.events import Request

            self._write(
                Request(
                    id=request.id,
                    asks=kind,
                    preset=preset,
                    state=state,
                    tool=tool,
                    principal=principal,
                )
            )
        self._listeners.notify()
        return request, merged

    # -- reading -------------------------------------------------------------

    def pending(self) -> list[PendingRequest]:
        """The requests that wait now, oldest first."""
        self.expire()
        with self._lock:
            return sorted(self._pending.values(), key=lambda r: (r.created, int(r.id[1:])))

    def get(self, request_id: str) -> PendingRequest:
        """The waiting request ``request_id``; ``UnknownRequestError`` if none waits."""
        self.expire()
        with self._lock:
            request = self._pending.get(request_id)
            if request is not None:
                return request
            known = list(self._pending)
        hint = did_you_mean(request_id, known, "`presets requests` lists the pending ones")
        raise UnknownRequestError(
            f"no pending request {request_id!r}: it was decided already, expired, or never "
            f"filed{hint}"
        )

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def next_expiry(self) -> float | None:
        with self._lock:
            return min((r.expires for r in self._pending.values()), default=None)

    # -- deciding ------------------------------------------------------------

    def check_digest(self, request: PendingRequest, digest: str) -> None:
        """Raise ``DigestMismatchError`` unless ``digest`` names ``request``'s call.

        ``digest`` is the full hex digest or its first ``MIN_DIGEST`` digits
        or more, as ``presets requests`` shows it (``sha256:`` may lead).
        """
        given = digest.strip().lower().removeprefix("sha256:")
        if request.digest is None:
            raise DigestMismatchError(
                f"request {request.id} is a {request.kind} request, not a call: it has no "
                "digest to check; approve it without --digest"
            )
        if len(given) < MIN_DIGEST or not request.digest.startswith(given):
            raise DigestMismatchError(
                f"request {request.id} is not the call you checked: its digest is "
                f"sha256:{request.digest[:MIN_DIGEST]}…, not {digest!r} (give at least "
                f"{MIN_DIGEST} hex digits). Nothing was approved; `presets requests --full` "
                "shows the call that waits now."
            )

    def decide(self, request_id: str, outcome: Outcome, *, by: str) -> PendingRequest:
        """Take ``request_id`` out of the store with ``outcome``, resolve it, log it."""
        with self._lock:
            request = self._pending.pop(request_id, None)
        if request is None:
            self.get(request_id)  # raises the error with its hint
            raise AssertionError("unreachable")  # pragma: no cover
        self._resolve(request, outcome, by)
        self._listeners.notify()
        return request

    def expire(self) -> list[PendingRequest]:
        """Drop every request past its expiry (outcome ``expired``); return them."""
        with self._lock:
            expired = self._take_expired(self._clock())
        self._finish_expired(expired)
        if expired:
            self._listeners.notify()
        return expired

    # -- listeners -----------------------------------------------------------

    def add_on_change(self, callback: Listener) -> None:
        self._listeners.add(callback)

    def remove_on_change(self, callback: Listener) -> None:
        self._listeners.remove(callback)

    # -- internals -----------------------------------------------------------

    def _take_expired(self, now: float) -> list[PendingRequest]:
        """Remove what expired by ``now``. Hold ``_lock``; finish outside it."""
        gone = [r for r in self._pending.values() if r.expires <= now]
        for request in gone:
            del self._pending[request.id]
        return gone

    def _finish_expired(self, expired: list[PendingRequest]) -> None:
        for request in expired:
            self._resolve(request, "expired", "timeout")

    def _resolve(self, request: PendingRequest, outcome: Outcome, by: str) -> None:
        if not request.outcome.done():
            request.outcome.set_result(outcome)
        from agent_presets.server.events import Decision

        self._write(
            Decision(
                id=request.id,
                asks=request.kind,
                outcome=outcome,
                by=by,
                preset=request.preset,
                tool=request.tool,
            )
        )

    def _write(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)


def _minutes(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    return "1 minute" if minutes == 1 else f"{minutes} minutes"
