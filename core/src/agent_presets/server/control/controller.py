"""The controller: the changes a person or the agent may make on a running server.

A person steers a running ``presets serve`` from the shell (``presets on``,
``presets approve`` ...) and from the browser console; the agent asks
through the MCP tool ``<prefix>presets_request``. All of them go through one
``Controller``, so one rule decides each thing once:

- An override changes only through ``PresetManager.set_override``: the sync and
  the server's fan-out then tell every MCP client (``tools/list_changed``).
  Each change writes a ``change`` event naming who made it.
- Turning a *risky* preset on (``Preset.dangerous``: filesystem-write,
  destructive, shell) needs ``confirmed``: a caller that has not asked its
  person gets ``ConfirmationRequired`` and asks, then sends it again.
- The agent may narrow at once (``off``) but never widen: ``on`` files a
  request in the ``RequestStore`` that only a person approves.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, cast

from agent_presets.lib.adapters import check_arguments
from agent_presets.lib.manager import PresetManager
from agent_presets.lib.model import (
    OVERRIDE_STATES,
    PresetError,
    PresetValidationError,
    ToolCallError,
    ToolDef,
    UnknownPresetError,
)
from agent_presets.lib.principal import LOCAL, current_principal
from agent_presets.server.principals import Principals, check_principal
from agent_presets.server.requests import (
    DEFAULT_TTL,
    MAX_REASON,
    RequestStore,
    iso_utc,
)

if TYPE_CHECKING:
    from agent_presets.server.events import Event, State


TTL_ENV: Final = "PRESETS_REQUEST_TTL"
"""Seconds a request waits before it expires (default 600); tests shorten it."""


REQUEST_TOOL: Final = "presets_request"


REQUEST_OUTPUT: Final[Mapping[str, Any]] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "status": {
                "enum": ["applied", "unchanged", "pending"],
                "description": "applied (off, at once), unchanged, or pending (waits for the user)",
            },
            "message": {"type": "string", "description": "What happened and what to do next."},
            "preset": {"type": "string"},
            "state": {"const": "off"},
            "request": {"type": "string", "description": "The pending request's id."},
            "expires": {"type": "string", "description": "When it expires, ISO 8601 UTC."},
        },
        "required": ["status", "message"],
    }
)
"""What ``presets_request`` returns, served as its ``outputSchema``."""
"""The agent's tool, after the host's namespace prefix (``space_presets_request``)."""


BY_RE: Final = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


class ConfirmationRequired(PresetError):
    """Turning on a risky preset needs the person's confirmation first."""

    def __init__(self, preset: str, risk: str) -> None:
        self.preset = preset
        self.risk = risk
        super().__init__(
            f"preset {preset!r} has risk {risk!r}: turning it on needs confirmation "
            "(answer the prompt on a terminal, or pass --yes)"
        )


def request_ttl_from_env() -> float:
    """``PRESETS_REQUEST_TTL`` seconds when set to a positive number, else 10 minutes."""
    text = os.environ.get(TTL_ENV, "").strip()
    if not text:
        return DEFAULT_TTL
    try:
        ttl = float(text)
    except ValueError:
        ttl = 0.0
    if not ttl > 0 or ttl == float("inf"):
        raise PresetValidationError(f"{TTL_ENV}={text!r}: give a positive number of seconds")
    return ttl


class Controller:
    """The changes a person or the agent may make on a running server. Thread-safe.

    ``emit`` receives every event (a server passes ``ToolPolicy.emit``, so the
    changes, requests and decisions share the server's event log). The console
    reads ``status()`` and ``requests.pending()`` and decides through
    ``set_override``, ``approve`` and ``deny``, exactly as the socket does.
    """

    def __init__(
        self,
        manager: PresetManager,
        *,
        emit: Callable[[Event], None] | None = None,
        requests: RequestStore | None = None,
        principals: Principals | None = None,
    ) -> None:
        self.manager = manager
        self.principals = principals
        """Each principal's own state (the server sets it); None: one principal, the server."""
        self.allows: Callable[[str, str | None], bool] | None = None
        """Whether a tool may be served to a principal's token, or to no token (the
        server's ``ToolPolicy.allows``, which the server sets); None: every tool may."""
        self._emit = emit
        # One change at a time, so each change line names the state it replaced.
        self._lock = threading.RLock()
        self.requests = (
            requests
            if requests is not None
            else RequestStore(ttl=request_ttl_from_env(), emit=emit)
        )

    # -- reading -------------------------------------------------------------

    def status(self, principal: str | None = None) -> dict[str, Any]:
        """``{"server": pid, "context": {...}, "presets": [...]}`` (``docs/control.md``).

        With ``principal``, what that principal is served: its context and
        overrides (the server's, with its own over them).
        """
        manager = self.manager
        theirs = self._principals(principal)
        if theirs is None:
            overrides = manager.get_overrides()
            context = manager.get_context()
            resolution = manager.resolve()
        else:
            assert principal is not None
            overrides = theirs.overrides(principal)
            context = theirs.context(principal)
            resolution = theirs.resolution(principal)
        active = {a.name: a for a in resolution.active_presets}
        presets = []
        for preset in manager.registry.list():
            state = overrides.get(preset.name, "auto")
            on = active.get(preset.name)
            reason: str
            if on is not None:
                reason = on.reason
            elif state == "off":
                reason = "override"
            elif preset.default_state == "off":
                reason = "off-by-default"
            else:
                reason = "no-matching-context"
            presets.append(
                {
                    "name": preset.name,
                    "group": preset.group,
                    "state": state,
                    "active": on is not None,
                    "reason": reason,
                    "risk": preset.risk,
                }
            )
        return {
            "server": os.getpid(),
            "principal": principal if principal is not None else LOCAL,
            "principals": self.principals.names() if self.principals is not None else [LOCAL],
            "context": context,
            "presets": presets,
            "requests": len(self.requests),
            "allowed": self._allowed(principal),
        }

    def _allowed(self, principal: str | None) -> list[str] | None:
        """The tools the allow-lists let ``principal`` be served (the server's ``--allow``,
        and its token's), by MCP name; None when they leave every tool open."""
        if self.allows is None:
            return None
        token = None if principal is None or principal == LOCAL else principal
        adapters = self.manager.tool_adapters
        names = sorted(
            {adapters.mcp_name(a) for a in adapters.list()}
            | {self.request_tool(adapters.namespace_prefix or "").name}
        )
        allowed = [n for n in names if self.allows(n, token)]
        return None if len(allowed) == len(names) else allowed

    def _principals(self, principal: str | None) -> Principals | None:
        """The principals to change ``principal``'s own state in; None: the server's state.

        No principal, or ``local``, is the server's own state (the host's
        context, the server-wide overrides). Another needs a server that
        keeps principals, and a name a token could have.
        """
        if principal is None or principal == LOCAL:
            return None
        if self.principals is None:
            raise PresetValidationError(
                f"--principal {principal!r}: this server keeps no principals of its own"
            )
        check_principal(principal)
        return self.principals

    def pending(self, principal: str | None = None) -> list[dict[str, Any]]:
        """The pending requests, oldest first; with ``principal``, only the ones it made."""
        return [
            r.to_json()
            for r in self.requests.pending()
            if principal is None or r.principal == principal
        ]

    # -- a person's changes --------------------------------------------------

    def set_override(
        self,
        name: str,
        state: str,
        *,
        by: str,
        confirmed: bool = False,
        principal: str | None = None,
    ) -> dict[str, Any]:
        """Set ``name`` to ``state`` (on/off/auto); log who did it.

        Without ``principal`` (or with ``local``) the override is the
        server's, for every principal; with one, it is that principal's own
        and wins over the server's. Raises ``ConfirmationRequired`` for a
        risky preset turned on without ``confirmed``, before anything changes.
        """
        theirs = self._principals(principal)
        _check_by(by)
        if state not in OVERRIDE_STATES:
            raise PresetValidationError(f"state {state!r} is not one of: on, off, auto")
        preset = self.manager.registry.get(name)
        if preset is None:
            raise UnknownPresetError(self.manager.registry.unknown_message(name))
        with self._lock:
            if theirs is None:
                previous = self.manager.get_overrides().get(name, "auto")
            else:
                assert principal is not None
                own = theirs.own(principal)
                previous = own.overrides.get(name, "auto") if own is not None else "auto"
            if state == "on" and previous != "on" and preset.dangerous and not confirmed:
                raise ConfirmationRequired(name, preset.risk)
            if theirs is None:
                self.manager.set_override(name, state)
                if self.principals is not None:
                    self.principals.share_server_overrides()
            else:
                assert principal is not None
                theirs.set_override(principal, name, state)
            changed = previous != state
            if changed:
                # The event classes load with the first line written, not with the server.
                from agent_presets.server.events import Change

                self._write(
                    Change(
                        preset=name,
                        state=cast("State", state),
                        previous=cast("State", previous),
                        by=by,
                        principal=None if theirs is None else principal,
                    )
                )
        resolution = (
            self.manager.resolve() if theirs is None else theirs.resolution(principal or LOCAL)
        )
        return {
            "preset": name,
            "state": state,
            "previous": previous,
            "changed": changed,
            "active": name in resolution.active_names,
        }

    def set_context(
        self, changes: Mapping[str, Any], *, by: str, principal: str | None = None
    ) -> dict[str, Any]:
        """Change fields of the host's context, as the host app would; log who did it.

        Every key must be a declared field and every value one it allows
        (``Vocabulary.check_change``: the error names the field, the declared
        values and the closest one), else nothing changes. A host that keeps
        its context (``agent_presets.hosting.Host``: the served host) takes the
        change through its ``update_context(changes)``, so it is checked by its
        app, saved and reported as its own; otherwise the manager's context is
        changed directly. It is
        a ``context`` event, not a tool call: no agent made it.
        """
        _check_by(by)
        if not changes:
            raise PresetValidationError("give at least one field to set, as KEY=VALUE")
        manager = self.manager
        theirs = self._principals(principal)
        with self._lock:
            manager.vocabulary.check_change(changes)
            if theirs is not None:
                assert principal is not None
                previous = theirs.context(principal)
                now = theirs.set_context(principal, changes)
                resolution = theirs.resolution(principal)
            else:
                previous = manager.get_context()
                host = manager.app
                if hasattr(host, "update_context"):  # a host that keeps its context (Host)
                    host.update_context(dict(changes))
                else:
                    manager.set_context({**previous, **changes})
                now = manager.get_context()
                resolution = manager.resolve()
            changed = sorted(k for k in {*previous, *now} if previous.get(k) != now.get(k))
            if changed:
                from agent_presets.server.events import ContextChange

                self._write(
                    ContextChange(
                        fields={k: now.get(k) for k in changed},
                        by=by,
                        principal=None if theirs is None else principal,
                    )
                )
        return {
            "context": now,
            "previous": previous,
            "changed": changed,
            "active": list(resolution.active_names),
        }

    def approve(
        self, request_id: str, *, by: str, confirmed: bool = False, digest: str | None = None
    ) -> dict[str, Any]:
        """Approve a pending request: an override is set now; a waiting call may run.

        With ``digest`` (what the person was shown), a call is approved only
        if it is that call (``DigestMismatchError`` otherwise, nothing changes).
        """
        _check_by(by)
        with self._lock:
            request = self.requests.get(request_id)
            if digest is not None:
                self.requests.check_digest(request, digest)
            result: dict[str, Any] = {"id": request.id, "kind": request.kind}
            if request.kind == "call":
                result.update(tool=request.tool, digest=request.digest)
            if request.kind == "override":
                assert request.preset is not None and request.state is not None
                preset = self.manager.registry.get(request.preset)
                if preset is not None and preset.dangerous and not confirmed:
                    raise ConfirmationRequired(request.preset, preset.risk)
                # Set first: a preset that cannot be turned on leaves the request pending.
                result["change"] = self.set_override(
                    request.preset,
                    request.state,
                    by="approval",
                    confirmed=True,
                    principal=request.principal,
                )
            self.requests.decide(request.id, "approved", by=by)
        return result

    def deny(self, request_id: str, *, by: str) -> dict[str, Any]:
        _check_by(by)
        with self._lock:
            request = self.requests.decide(request_id, "denied", by=by)
        return {"id": request.id, "kind": request.kind}

    # -- the agent's requests ------------------------------------------------

    def ask(self, preset: str, state: str, reason: str) -> dict[str, Any]:
        """The agent asks for ``preset`` ``on`` or ``off``; the answer is for the model.

        ``off`` only narrows what the agent can do, so it applies at once.
        ``on`` files a request that waits for a person; it never applies here.
        """
        registry = self.manager.registry
        found = registry.get(preset)
        if found is None:
            raise ToolCallError(registry.unknown_message(preset))
        with self._lock:
            return self._ask(preset, state, reason, current_principal())

    def _ask(self, preset: str, state: str, reason: str, principal: str) -> dict[str, Any]:
        theirs = self._principals(principal)
        if theirs is None:
            overrides = self.manager.get_overrides()
            active = preset in self.manager.resolve().active_names
        else:
            overrides = theirs.overrides(principal)
            active = preset in theirs.resolution(principal).active_names
        if state == "off":
            if overrides.get(preset) == "off":
                return {"status": "unchanged", "message": f"Preset {preset!r} is off already."}
            for waiting in self.requests.pending():
                if (
                    waiting.kind == "override"
                    and waiting.preset == preset
                    and waiting.principal == principal
                ):
                    self.requests.decide(waiting.id, "withdrawn", by="agent")
            self.set_override(
                preset, "off", by="agent", principal=None if theirs is None else principal
            )
            return {
                "status": "applied",
                "preset": preset,
                "state": "off",
                "message": f"Preset {preset!r} is off now; its tools are gone from the list.",
            }
        if state != "on":
            raise ToolCallError(f"state {state!r} is not one of: on, off")
        if active:
            return {
                "status": "unchanged",
                "message": f"Preset {preset!r} is active already; its tools are in the list.",
            }
        # RequestLimitError (a ToolCallError) tells the agent to stop asking.
        request, merged = self.requests.file(
            "override", preset=preset, state="on", reason=reason, principal=principal
        )
        again = " (you asked before; the reason is updated)" if merged else ""
        return {
            "status": "pending",
            "request": request.id,
            "preset": preset,
            "expires": iso_utc(request.expires),
            "message": (
                f"Request {request.id}{again} waits for the user, who decides it "
                f"(`presets approve {request.id}` or the console); it expires at "
                f"{iso_utc(request.expires)}. Do not ask again: carry on without the preset. "
                "If the user approves, the server announces the new tools (tools/list_changed)."
            ),
        }

    def request_tool(self, prefix: str) -> ToolDef:
        """The agent's ``<prefix>presets_request`` tool, a host tool (no owner, no preset)."""
        return request_tool(prefix, self.ask)

    def _write(self, event: Event) -> None:
        if self._emit is not None:
            self._emit(event)


def _check_by(by: str) -> None:
    if not isinstance(by, str) or not BY_RE.match(by):
        raise PresetValidationError(
            f"'by' must be a short lowercase name such as cli or console, not {by!r}"
        )


def request_tool(prefix: str, ask: Callable[[str, str, str], Any]) -> ToolDef:
    """The agent's ``<prefix>presets_request`` tool, asking through ``ask(preset, state, reason)``.

    A host tool (no owner, no preset). What it lists does not depend on
    ``ask``: the start front (``agent_presets.server.start``) lists it before
    any controller exists.
    """
    name = f"{prefix}{REQUEST_TOOL}"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "preset": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "The preset's name, e.g. one an unavailable tool's error named.",
            },
            "state": {
                "type": "string",
                "enum": ["on", "off"],
                "description": "on: ask the user to turn it on. off: turn it off now.",
            },
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_REASON,
                "description": "One sentence for the user: what you need it for.",
            },
        },
        "required": ["preset", "state", "reason"],
        "additionalProperties": False,
    }
    validators: list[Any] = []  # built on the first call: serve starts without jsonschema

    def run(arguments: Mapping[str, Any] | None = None, *, context: Any = None) -> Any:
        args = dict(arguments or {})
        if not validators:
            import jsonschema

            validators.append(jsonschema.Draft202012Validator(schema))
        check_arguments(name, validators[0], args)
        return ask(args["preset"], args["state"], args["reason"])

    return ToolDef(
        name=name,
        title="Ask the user to turn a preset on or off",
        description=(
            "Ask the user to turn a preset (a set of tools) on, or turn one off. "
            "state 'off' applies at once. state 'on' never applies by itself: it files a "
            "request that waits for the user's approval and answers at once with its id; "
            "the server announces the new tools (tools/list_changed) if the user approves. "
            "Use it when a tool you need is off (its error names the preset)."
        ),
        input_schema=MappingProxyType(schema),
        output_schema=REQUEST_OUTPUT,
        run=run,
        annotations=MappingProxyType(
            {
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            }
        ),
    )
