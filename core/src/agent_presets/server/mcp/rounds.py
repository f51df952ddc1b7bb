"""Multi-round-trip calls (2026-07-28): what one round of a call carries to the next.

In the modern era the server cannot send a request in the middle of a call.
A call that needs the client (a handler's ``elicit``, ``sample`` or
``list_roots``, a ``--confirm-via client`` confirmation, or a prompt's
provider asking through its context) ends its round
with an ``input_required`` result: the questions, by key, and a
``requestState``. The client asks its person or model, then calls again with
the answers (``inputResponses``) and the state, and the call runs again from
the start with the answers waiting for the same questions.

The state is the client's to carry, not to read or change: the SDK's
``RequestStateBoundary`` seals it (AES-GCM) and binds it to the method, the
tool (or prompt), a digest of the arguments, the caller (its token) and this server, with
an expiry, and refuses a forged, altered, expired or misapplied one with
``-32602``. The keys live in the state directory (``request-state.key``, mode
0600), so a restarted server continues a round trip it began; a server
without a state directory seals with a key of its own process.

What a state holds, once unsealed (``Rounds``): the answers of earlier
rounds, the keys the last round asked, and the id of the confirmation that
approved the call, if one did.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from agent_presets.lib.statekey import KEY_FILE, state_key
from agent_presets.server.mcp.auth import principal_of

STATE_TTL: Final = 600.0
"""Seconds a round's state stays valid: the time a person has to answer in the client."""


@dataclass
class Rounds:
    """The unsealed state of a call's rounds (see the module docstring)."""

    answers: dict[str, Any] = field(default_factory=dict)
    asked: frozenset[str] = frozenset()
    confirmed: str | None = None
    """The request id of the client's confirmation that approved this call (``confirm.py``)."""

    @classmethod
    def of(cls, params: Any) -> Rounds:
        """The rounds so far of a ``tools/call``'s or ``prompts/get``'s params (typed or wire)."""
        if params is None:
            return cls()
        if isinstance(params, Mapping):
            state, responses = params.get("requestState"), params.get("inputResponses")
        else:
            state, responses = params.request_state, params.input_responses
        rounds = cls._read(state)
        # Every answer counts, asked or not (the spec: ignore what you do not recognize):
        # a question reads only its own key, and skipping a round gains a client nothing it
        # could not answer anyway. A confirmation checks its own key (confirm.py).
        for key, value in (responses or {}).items():
            if isinstance(key, str):
                rounds.answers[key] = (
                    value
                    if isinstance(value, Mapping)
                    else value.model_dump(by_alias=True, mode="json", exclude_none=True)
                )
        return rounds

    @classmethod
    def _read(cls, state: Any) -> Rounds:
        # Unsealed by the boundary, so ours; a server that lost its key never gets here.
        if not isinstance(state, str) or not state:
            return cls()
        try:
            value = json.loads(state)
        except ValueError:
            return cls()
        if not isinstance(value, dict):
            return cls()
        answers = value.get("answers")
        asked = value.get("asked")
        confirmed = value.get("confirmed")
        return cls(
            answers=dict(answers) if isinstance(answers, dict) else {},
            asked=frozenset(k for k in asked if isinstance(k, str))
            if isinstance(asked, list)
            else frozenset(),
            confirmed=confirmed if isinstance(confirmed, str) else None,
        )

    def state(self, asking: Iterable[str]) -> str:
        """The next round's state (plain: the boundary seals it on its way out)."""
        value: dict[str, Any] = {"answers": self.answers, "asked": sorted(asking)}
        if self.confirmed is not None:
            value["confirmed"] = self.confirmed
        return json.dumps(value, separators=(",", ":"), sort_keys=True)


class InputRequired(BaseException):
    """Raised out of a call's round in the modern era: the client must answer first.

    A ``BaseException`` so that a handler's broad ``except Exception`` does not
    swallow it; the pipeline's ``Run`` stage turns it into the result.
    """

    def __init__(self, requests: Mapping[str, dict[str, Any]], rounds: Rounds) -> None:
        super().__init__(", ".join(requests))
        self.requests = dict(requests)
        self.rounds = rounds

    def result(self) -> dict[str, Any]:
        return {
            "resultType": "input_required",
            "inputRequests": self.requests,
            "requestState": self.rounds.state(self.requests),
        }


class MissingCapability(BaseException):
    """A modern client did not declare a capability the call needs: ``-32021``.

    ``required`` is the ``ClientCapabilities`` wire dict naming what is
    missing (``{"sampling": {}}``). The legacy era has no such error; there a
    handler gets ``UnsupportedByClientError`` instead, a tool error it may
    handle.
    """

    def __init__(
        self, feature: str, required: Mapping[str, Any], tool: str, doing: str = "call this tool"
    ) -> None:
        super().__init__(
            f"{tool} needs the client's {feature} capability, which this request's "
            "clientCapabilities do not declare; declare it (and answer its input requests) "
            f"to {doing}"
        )
        self.required = dict(required)


def request_keys(state_dir: Path | None) -> list[bytes]:
    """The keys that seal request states: the state directory's (``statekey.py``).

    Without a state directory (a server in memory), a key of this process only.
    """
    if state_dir is None:
        return [secrets.token_bytes(32)]
    return [state_key(state_dir)]


def state_boundary(
    state_dir: Path | None, audience: str, store: Any = None
) -> RequestStateBoundary:
    """The server middleware that seals every ``requestState`` going out and checks every one in.

    On a shared store (Redis) the key is the store's, the same for every
    replica, so a round trip begun on one replica continues on another.
    """
    shared = getattr(store, "shared_key", None)
    keys = [shared(KEY_FILE)] if shared is not None else request_keys(state_dir)
    security = RequestStateSecurity(keys=keys, ttl=STATE_TTL, bind_principal=principal_of)
    return RequestStateBoundary(security, default_audience=audience)


__all__ = [
    "KEY_FILE",
    "InputRequired",
    "MissingCapability",
    "Rounds",
    "request_keys",
    "state_boundary",
]
