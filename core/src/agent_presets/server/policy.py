"""Operator policy for a served tool surface: an allow-list, call budgets, an event log.

Adopted from the Space agent reference (DESIGN.md): whoever starts the server
can narrow the tool surface to an allow-list (unknown names are rejected when
the policy is built, never ignored), cap how many calls a session may make,
and keep an append-only log of every call with its latency (the schema and
the file are ``events.py``'s, a call's line is its record's, ``record.py``). Each gate refuses
with its own message, which names the layer and who can open it, so a model
can tell "not in this context" from "not allowed here" from "budget used up".

This sits above the presets: presets decide what is active for the context;
the policy decides what this server exposes at all.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from agent_presets.lib.model import PresetValidationError, ToolCallError
from agent_presets.lib.principal import LOCAL as LOCAL
from agent_presets.lib.schema import quote
from agent_presets.lib.suggest import did_you_mean
from agent_presets.server.eventlog import DEFAULT_BACKUPS, DEFAULT_MAX_BYTES, EventLog
from agent_presets.server.record import CallRecord, Outcome, line_of
from agent_presets.server.store.embedded import EmbeddedStore

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.server.events import CallEvent, Event
    from agent_presets.server.store import Store

SUMMARY_SECONDS = 60.0
"""How often counted refusals of a spent budget are written as one summary line."""


# The budgets' counters in the store: the server's calls, a tool's, a token's, and a
# token's calls of a tool (token names have no ':', so no two keys collide).
CALLS: Final = "calls"
TOOL: Final = "tool:"
TOKEN: Final = "token:"


class GateError(ToolCallError):
    """A call refused by a policy layer (``layer`` names which)."""

    def __init__(self, layer: str, message: str) -> None:
        super().__init__(message)
        self.layer = layer


@dataclass(frozen=True)
class Allowed:
    tools: frozenset[str]
    names: tuple[str, ...]
    """The preset and tool names it was built from, as given."""


@dataclass(frozen=True)
class Profile:
    """What one token may do on top of the server's own gates (``tokens.py`` stores them).

    Narrowing only: a profile never opens a tool the server's allow-list
    closes, and its budgets count alongside the server's.
    """

    name: str
    allow: Allowed | None = None
    max_calls: int | None = None
    max_calls_per_tool: int | None = None
    delivery: str | None = None
    """How the token's clients are served their tools (``delivery.py``); None: the server's."""


class EventSink(Protocol):
    """Where the log's lines go: ``EventLog`` (a file), or the Redis store's stream."""

    def write(self, event: Any) -> None: ...

    def close(self) -> None: ...


ProfileSource = Callable[[str], "Profile | None"]
"""Token name -> its profile now, or None once the token is gone (revoked)."""


@dataclass
class _Tally:
    """Refusals by one spent budget: the latest, and how many since the last line."""

    last: CallEvent
    since: float
    count: int = 0


class ToolPolicy:
    """Gates in front of the tool registry. Thread-safe; one per served session set."""

    def __init__(
        self,
        *,
        allow: Allowed | None = None,
        max_calls: int | None = None,
        max_calls_per_tool: int | None = None,
        event_log: str | Path | None = None,
        event_log_max_bytes: int = DEFAULT_MAX_BYTES,
        event_log_backups: int = DEFAULT_BACKUPS,
        summary_seconds: float = SUMMARY_SECONDS,
        profiles: ProfileSource | None = None,
        store: Store | None = None,
        events: EventSink | None = None,
    ) -> None:
        for label, value in (("max_calls", max_calls), ("max_calls_per_tool", max_calls_per_tool)):
            if value is not None and value < 1:
                raise PresetValidationError(f"{label} must be at least 1, got {value}")
        self.allow = allow
        self.max_calls = max_calls
        self.max_calls_per_tool = max_calls_per_tool
        self.event_log = Path(event_log) if event_log is not None else None
        self.events: EventSink | None = (
            events
            if events is not None
            else EventLog(event_log, max_bytes=event_log_max_bytes, backups=event_log_backups)
            if event_log is not None
            else None
        )
        self.summary_seconds = summary_seconds
        self._lock = threading.Lock()
        self._tallies: dict[str, _Tally] = {}
        self.profiles = profiles
        # The budgets' counters: this process's own unless the server shares its store.
        self.store: Store = store if store is not None else EmbeddedStore()
        self.own_store = store is None
        """Whether the counters are the policy's own (a server gives it its store then)."""

    @staticmethod
    def allow_list(presets: Presets, names: Iterable[str]) -> Allowed:
        """Expand preset names and tool names (MCP names or ids) into MCP tool names.

        Unknown names are an error naming each and the closest known name.
        """
        by_preset = {p.name: p for p in presets.registry.list()}
        adapters = presets.tool_adapters
        tools: set[str] = set()
        given: list[str] = []
        for name in names:
            given.append(name)
            preset = by_preset.get(name)
            if preset is not None:
                tools.update(
                    adapters.mcp_name(a) for t in preset.tool_ids if (a := adapters.get(t))
                )
                continue
            adapter = adapters.find(name)
            if adapter is not None:
                tools.add(adapters.mcp_name(adapter))
                continue
            known = [*by_preset, *(adapters.mcp_name(a) for a in adapters.list())]
            hint = did_you_mean(name, known, "`presets list` and `presets tools` show the names")
            raise PresetValidationError(
                f"allow-list names {name!r}, which is neither a preset nor a tool{hint}"
            )
        return Allowed(frozenset(tools), tuple(given))

    # -- gates ---------------------------------------------------------------

    def allows(self, tool: str, token: str | None = None) -> bool:
        if self.allow is not None and tool not in self.allow.tools:
            return False
        if token is None:
            return True
        profile = self.profile(token)
        return profile is not None and (profile.allow is None or tool in profile.allow.tools)

    def profile(self, token: str) -> Profile | None:
        """The token's profile now; None when no source knows it (then it may do nothing)."""
        return self.profiles(token) if self.profiles is not None else None

    def admit(self, tool: str, token: str | None = None, *, count: bool = True) -> None:
        """Count a call to ``tool`` or raise the ``GateError`` of the first closed layer.

        With a ``token``, its profile's allow-list and budgets apply too; a
        refused call counts against no budget. ``check`` then ``charge``.
        """
        self.check(tool, token)
        self.charge(tool, token)

    def check(self, tool: str, token: str | None = None) -> None:
        """Raise the ``GateError`` of the allow-list or token that closes ``tool``; count nothing.

        Checked again after a call waited for a person: a token revoked
        meanwhile refuses it then.
        """
        if self.allow is not None and tool not in self.allow.tools:
            raise GateError(
                "allow-list",
                f"Tool {quote(tool)} is not allowed on this server: it was started with an "
                "allow-list that does not include it. Only the user can change that, by "
                "restarting the server with --allow for the tool or its preset.",
            )
        profile = self.profile(token) if token is not None else None
        if token is not None:
            if profile is None:
                raise GateError(
                    "token",
                    f"The token {token!r} this session uses is no longer valid (revoked). "
                    "Tell the user; they can create a new one with `presets tokens create`.",
                )
            if profile.allow is not None and tool not in profile.allow.tools:
                raise GateError(
                    "allow-list",
                    f"Tool {quote(tool)} is not allowed for the token {token!r}: its allow-list "
                    "does not include it. Only the user can change that, with "
                    "`presets tokens create --replace` and a wider --allow.",
                )

    def charge(self, tool: str, token: str | None = None, *, count: bool = True) -> None:
        """Count a call to ``tool`` against every budget, or raise the spent one's ``GateError``.

        Atomic: a call is counted against all of its budgets or none of them,
        in one ``store.charge`` (on Redis, one round trip shared by every
        replica, so ``--max-calls 10`` admits ten calls across them all).
        ``count=False`` only checks: a call that waits for a person is charged
        when it may run, so a denied or expired call costs no budget.
        """
        profile = self.profile(token) if token is not None else None
        counters: list[tuple[str, int | None]] = [
            (CALLS, self.max_calls),
            (TOOL + tool, self.max_calls_per_tool),
        ]
        if profile is not None:
            mine = TOKEN + profile.name
            counters += [
                (mine, profile.max_calls),
                (f"{mine}:{TOOL}{tool}", profile.max_calls_per_tool),
            ]
        spent = self.store.charge(counters, count=count)
        if spent is None:
            return
        if spent == CALLS:
            raise GateError(
                "budget",
                f"The call budget of this server ({self.max_calls} tool calls) is used up. "
                "Tell the user; a restart with a larger --max-calls resets it.",
            )
        if spent == TOOL + tool:
            raise GateError(
                "budget",
                f"Tool {tool!r} has used its budget of {self.max_calls_per_tool} calls on "
                "this server. Use other tools, or tell the user.",
            )
        assert profile is not None
        if spent == TOKEN + profile.name:
            raise GateError(
                "budget",
                f"The call budget of the token {profile.name!r} ({profile.max_calls} "
                "tool calls) is used up for this server's run. Tell the user.",
            )
        raise GateError(
            "budget",
            f"Tool {tool!r} has used the token {profile.name!r}'s budget of "
            f"{profile.max_calls_per_tool} calls. Use other tools, or tell the user.",
        )

    @property
    def calls(self) -> int:
        """Tool calls counted so far (every replica's, on a shared store)."""
        return self.store.counts(CALLS).get(CALLS, 0)

    @property
    def calls_by_tool(self) -> dict[str, int]:
        return {k.removeprefix(TOOL): v for k, v in self.store.counts(TOOL).items()}

    def token_calls(self, token: str) -> int:
        """Tool calls counted so far for the token named ``token``."""
        key = TOKEN + token
        return self.store.counts(key).get(key, 0)

    # -- event log -----------------------------------------------------------

    def write(self, record: CallRecord) -> None:
        """Log a call's one record: its line (``record.line_of``), a ``refusal`` or a ``call``.

        A refusal by a spent budget may be counted instead (``_refused``).
        """
        if self.events is None:
            return
        line = line_of(record)
        if record.outcome == "refused":
            self._refused(line)
        else:
            self.events.write(line)

    def record(
        self,
        tool: str,
        *,
        ok: bool,
        seconds: float,
        error: str | None = None,
        layer: str | None = None,
        preset: str | None = None,
        exc: BaseException | None = None,
        arguments: Mapping[str, Any] | None = None,
        token: str | None = None,
        known: bool = True,
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        """Log one call from loose facts: a ``refusal`` if ``layer`` names the gate that
        refused it, else a ``call``. The server's pipeline writes a ``CallRecord`` with
        ``write``; this is the same line for a host that runs tools itself.

        ``error`` is the message the caller got (never written; with no ``exc``
        it says whether the error was an argument error).
        """
        outcome: Outcome = "refused" if layer is not None else "ok" if ok else "error"
        self.write(
            CallRecord(
                tool=tool,
                outcome=outcome,
                principal=token if token is not None else LOCAL,
                token=token,
                gate=layer,
                preset=preset,
                seconds=seconds,
                arguments=arguments,
                error=exc,
                message=error,
                known=known,
                schema=schema,
            )
        )

    def emit(self, event: Event) -> None:
        """Log an event of another kind (a request, a decision, a change).

        One log per server: the console, requests and tokens write through the
        policy's log, so lines from every writer share one file and one rotation.
        """
        if self.events is not None:
            self.events.write(event)

    def _refused(self, refusal: CallEvent) -> None:
        """Log a refusal, or count it if its budget was spent already.

        The first refusal by a spent budget is a line; later ones are counted
        and written as one summary line (``count``) every ``summary_seconds``
        and on ``close``, so a client hammering a spent budget cannot grow the
        log. A budget never refills during a run, so "seen once" is "spent".
        """
        assert self.events is not None
        if refusal.gate != "budget":
            self.events.write(refusal)
            return
        with self._lock:
            # The server-wide budget refuses every tool, so its count is one tally
            # (summarised as tool "*"); a tool's own budget is a tally per tool,
            # and only tools that exist have one.
            server_spent = self.max_calls is not None and self.calls >= self.max_calls
            token_spent = False
            if not server_spent and refusal.token is not None:
                profile = self.profile(refusal.token)
                token_spent = (
                    profile is not None
                    and profile.max_calls is not None
                    and self.token_calls(refusal.token) >= profile.max_calls
                )
            # Only a tool that exists has a budget, so a budget refusal names its tool.
            key = "*" if server_spent or token_spent else str(refusal.tool)
            if refusal.token is not None and not server_spent:
                # A token's budgets are its own: its tallies never merge with another's.
                key = f"{refusal.token}\0{key}"
            tally = self._tallies.get(key)
            if tally is None:
                self._tallies[key] = _Tally(refusal, since=time.monotonic())
                first = True
            else:
                tally.count += 1
                tally.last = refusal
                first = False
            due = self._due_summaries(time.monotonic())
        if first:
            self.events.write(refusal)
        for summary in due:
            self.events.write(summary)

    def _due_summaries(self, now: float, *, everything: bool = False) -> list[CallEvent]:
        """Take the counts that are due (all of them if ``everything``). Hold ``_lock``.

        A summary carries the time and token of the last refusal it counts.
        """
        due = []
        for key, tally in self._tallies.items():
            if tally.count and (everything or now - tally.since >= self.summary_seconds):
                last = tally.last
                tool = "*" if key.rpartition("\0")[2] == "*" else last.tool
                due.append(dataclasses.replace(last, tool=tool, count=tally.count))
                tally.count = 0
                tally.since = now
        return due

    def close(self) -> None:
        if self.events is None:
            return
        with self._lock:
            due = self._due_summaries(time.monotonic(), everything=True)
        for summary in due:
            self.events.write(summary)
        self.events.close()

    def status(self, token: str | None = None) -> dict[str, Any]:
        """The policy as the status resource shows it to a session of ``token`` (or of none).

        A token's session sees its own allow-list, budgets and calls, and the
        server's budgets (they count its calls too). It never sees another
        token's name or count, the server's allow-list, its call count (the
        sum of every token's calls) or the event log's path: those are the
        operator's (``presets tokens list``, ``presets stats``). A session
        without a token (stdio, HTTP without ``--auth``) is the operator's own
        agent and sees the server's policy.
        """
        if token is not None:
            profile = self.profile(token)
            calls = self.token_calls(token)
            return {
                "token": token,
                "allow": list(profile.allow.names) if profile and profile.allow else None,
                "calls": calls,
                "max_calls": profile.max_calls if profile else None,
                "max_calls_per_tool": profile.max_calls_per_tool if profile else None,
                "server": {
                    "max_calls": self.max_calls,
                    "max_calls_per_tool": self.max_calls_per_tool,
                },
            }
        return {
            "allow": list(self.allow.names) if self.allow else None,
            "calls": self.calls,
            "max_calls": self.max_calls,
            "max_calls_per_tool": self.max_calls_per_tool,
            "event_log": str(self.event_log) if self.event_log else None,
        }
