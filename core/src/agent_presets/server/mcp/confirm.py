"""Confirmation before risky calls: ``presets serve --confirm risky|destructive``.

A call of a tool whose effective risk (``ToolDef.risk``, stamped by the
manager) is in the chosen set runs only once a person said yes. Every such
call is a pending request of kind ``call`` in the server's ``RequestStore``,
whichever way the person answers, so one rule decides it once:

- The request's ``outcome`` is the only truth. A person decides it:
  ``presets approve``/``deny`` or the console. The client's answer to an
  ``elicitation/create`` decides it only with ``confirm_via="client"``
  (``presets serve --confirm-via client``): by default (``operator``) the
  client is the agent's side, and an agent must not approve its own call.
  The timeout decides it too (``expired``), and a cancelled or abandoned call
  (``withdrawn``). Whoever decides first wins; the store decides a request
  once, so a later approval of a withdrawn call finds nothing and runs nothing.
- The request holds the call's full arguments and their digest, so what the
  person reads (``presets requests --full``, the console) is what runs; the
  waiting call checks its arguments against the digest before it runs.
- The call runs only when the outcome is ``approved``, and then once: the
  waiting call runs it, an approval itself runs nothing. The pipeline then
  admits it again (its ``Confirm`` stage): a preset turned off, a token
  revoked or a budget spent while it waited refuses it.
- Every decision is a ``decision`` event (the store writes it); the argument
  summary the person reads is the request's reason, never logged.

How the client is asked depends on its era. A legacy-era client gets an
``elicitation/create`` request in the middle of the call, which waits. A
2026-07-28 client cannot be sent a request: its call ends its first round
with an ``input_required`` result asking the same question (key
``presets-confirm-ID``, ID the request's), the request waits in the store
meanwhile (``presets approve`` works too), and the client's next round
carries the answer, which decides the request. The approval then holds for
the rest of that call's rounds (a handler may ask its own questions) and is
spent when the call completes: a replay of the last round is asked again.
Approvals live in this server's memory, so after a restart the person is
asked again. A client that declared no elicitation is never asked, in either
era: its call waits for ``presets approve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple, get_args

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets.lib.model import DANGEROUS_RISKS, ToolDef
from agent_presets.lib.principal import current_principal
from agent_presets.lib.safetext import shown_arguments
from agent_presets.server.config import CONFIRM_TIMEOUT, ConfirmMode, ConfirmVia
from agent_presets.server.mcp.rounds import STATE_TTL, InputRequired, Rounds
from agent_presets.server.requests import (
    PendingRequest,
    RequestLimitError,
    RequestStore,
    UnknownRequestError,
    call_digest,
)

if TYPE_CHECKING:
    from agent_presets.server.events import Outcome

log = logging.getLogger("agent_presets.server")

CONFIRM_MODES: Final[tuple[ConfirmMode, ...]] = get_args(ConfirmMode)
CONFIRM_VIA: Final[tuple[ConfirmVia, ...]] = get_args(ConfirmVia)
"""Who answers: ``operator`` only the person at ``presets approve`` or the console;
``client`` the MCP client's elicitation too, for a client the operator trusts."""
CONFIRM_RISKS: Final[Mapping[str, frozenset[str]]] = {
    "none": frozenset(),
    "risky": DANGEROUS_RISKS,  # filesystem-write, destructive, shell
    "destructive": frozenset({"destructive", "shell"}),
}
DEFAULT_TIMEOUT: Final = CONFIRM_TIMEOUT

ROUND_KEY: Final = "presets-confirm-"
"""The ``inputRequests`` key of a 2026-07-28 confirmation, followed by the request's id."""

# An empty form: accepting it is the answer. A field to tick would make the
# person say yes twice.
_NO_FIELDS: Final[dict[str, Any]] = {"type": "object", "properties": {}}


def summarize(arguments: Mapping[str, Any]) -> str:
    """``path='notes.txt', content='hello wor…' (52 chars)``: names and short values."""
    return shown_arguments(arguments)[0]


class ConfirmAnswer(NamedTuple):
    """What came of asking: the request's ``outcome``, and the refusal the model reads
    (None when the call may run)."""

    outcome: Outcome | None
    refusal: str | None
    request: PendingRequest | None = None
    """The request the person decided (None when none could be filed)."""


class CallConfirmation:
    """Asks a person before a call of a tool in ``risks`` runs (module docstring)."""

    def __init__(
        self,
        requests: RequestStore,
        mode: ConfirmMode = "none",
        timeout: float = DEFAULT_TIMEOUT,
        via: ConfirmVia = "operator",
    ) -> None:
        if mode not in CONFIRM_RISKS:
            raise ValueError(f"confirm mode {mode!r} is not one of: {', '.join(CONFIRM_MODES)}")
        if via not in CONFIRM_VIA:
            raise ValueError(f"confirm via {via!r} is not one of: {', '.join(CONFIRM_VIA)}")
        if not timeout > 0:
            raise ValueError(f"the confirmation timeout must be positive, got {timeout}")
        self.requests = requests
        self.mode = mode
        self.risks = CONFIRM_RISKS[mode]
        self.timeout = timeout
        self.via = via
        # 2026-07-28 confirmations (module docstring), touched on the loop only:
        self._asking: dict[str, PendingRequest] = {}
        """Requests whose question went out in a round, by id, until answered."""
        self._granted: dict[str, PendingRequest] = {}
        """Approved requests whose call has not completed yet, by id."""

    def needed(self, tool: ToolDef) -> bool:
        return tool.risk is not None and tool.risk in self.risks

    async def ask(
        self,
        ctx: ServerRequestContext[Any],
        tool: ToolDef,
        arguments: Mapping[str, Any],
        rounds: Rounds | None = None,
    ) -> ConfirmAnswer:
        """The person's answer: ``refusal`` None when the call may run now.

        Raises the loop's cancellation when the call is cancelled meanwhile,
        after withdrawing its request; raises ``InputRequired`` to ask a
        2026-07-28 client in a round (``rounds``, the call's rounds so far).
        """
        if self.via == "client" and rounds is not None and _asks_in_rounds(ctx):
            return await self._in_rounds(tool, arguments, rounds)
        try:
            # The request keeps the arguments in full: `presets requests --full` and the
            # console show them; the reason is the short form of the default listing.
            request, _ = self.requests.file(
                "call",
                tool=tool.name,
                preset=tool.preset,
                reason=f"{tool.name}({summarize(arguments)})",
                arguments=arguments,
                ttl=self.timeout,
                principal=current_principal(),  # the call's (Serving.run acts as it)
            )
        except RequestLimitError as exc:
            return ConfirmAnswer(
                None, f"{tool.name} did not run: it needs the user's confirmation, and {exc}"
            )
        try:
            outcome = await self._outcome(ctx, tool, request)
        except anyio.get_cancelled_exc_class():
            self._decide(request, "withdrawn", "client")
            raise
        return self._answer(outcome, tool, arguments, request)

    def _answer(
        self, outcome: Outcome, tool: ToolDef, arguments: Mapping[str, Any], request: PendingRequest
    ) -> ConfirmAnswer:
        if outcome == "approved":
            if call_digest(tool.name, arguments) != request.digest:  # runs what was approved
                return ConfirmAnswer(
                    outcome,
                    f"{tool.name} did not run: its arguments are not those approved in "
                    f"request {request.id}. Call it again; the user is asked again.",
                    request,
                )
            return ConfirmAnswer(outcome, None, request)
        if outcome == "denied":
            return ConfirmAnswer(
                outcome,
                f"The user refused to run {tool.name} (request {request.id}); it did not run "
                "and nothing changed. Do not call it again with these arguments: ask the user "
                "what to do instead.",
                request,
            )
        return ConfirmAnswer(
            outcome,
            f"{tool.name} did not run: it needs the user's confirmation (its risk is "
            f"{tool.risk}) and nobody confirmed request {request.id} within "
            f"{self.timeout:g} seconds. Ask the user to watch for it (`presets requests`, "
            "then `presets approve ID`, or the console), then call it again.",
            request,
        )

    async def _in_rounds(
        self, tool: ToolDef, arguments: Mapping[str, Any], rounds: Rounds
    ) -> ConfirmAnswer:
        """A 2026-07-28 client's confirmation, one round at a time (module docstring)."""
        digest = call_digest(tool.name, arguments)
        if rounds.confirmed is not None:
            granted = self._granted.get(rounds.confirmed)
            if granted is not None and granted.digest == digest:
                return ConfirmAnswer("approved", None, granted)
            rounds.confirmed = None  # spent, or from before a restart: asked again
        for key in sorted(rounds.asked):
            if not key.startswith(ROUND_KEY):
                continue
            request = self._asking.pop(key.removeprefix(ROUND_KEY), None)
            answer = rounds.answers.pop(key, None)
            if request is None or request.digest != digest:
                continue
            try:
                elicited = types.ElicitResult.model_validate(answer)
            except ValueError:
                self._asking[request.id] = request  # no answer: the same question again
                raise InputRequired({key: _question(tool, request)}, rounds) from None
            accepted = elicited.action == "accept"
            self._decide(request, "approved" if accepted else "denied", "elicitation")
            # Whoever decided first: the client now, or `presets approve` meanwhile.
            outcome = await _decided(request)
            if outcome == "approved":
                self._granted[request.id] = request
                rounds.confirmed = request.id
            return self._answer(outcome, tool, arguments, request)
        self._forget_done()
        principal = current_principal()
        for waiting in self._asking.values():
            # The same call asked again before its question was answered: the same
            # question, not a second request holding a second slot.
            if (
                waiting.digest == digest
                and waiting.principal == principal
                and not waiting.outcome.done()
            ):
                raise InputRequired({ROUND_KEY + waiting.id: _question(tool, waiting)}, rounds)
        try:
            request, _ = self.requests.file(
                "call",
                tool=tool.name,
                preset=tool.preset,
                reason=f"{tool.name}({summarize(arguments)})",
                arguments=arguments,
                # The person answers in the client within --confirm-timeout, as in the
                # legacy era; an unanswered round frees its slot then, not after the
                # round's state (10 minutes).
                ttl=min(STATE_TTL, self.timeout),
                principal=principal,
            )
        except RequestLimitError as exc:
            return ConfirmAnswer(
                None, f"{tool.name} did not run: it needs the user's confirmation, and {exc}"
            )
        self._asking[request.id] = request
        raise InputRequired({ROUND_KEY + request.id: _question(tool, request)}, rounds)

    def spend(self, request_id: str) -> None:
        """The call approved by ``request_id`` completed: the approval runs nothing more."""
        self._granted.pop(request_id, None)

    def _forget_done(self) -> None:
        """Drop questions nobody answered and approvals never used, once past their expiry."""
        now = time.time()
        for table in (self._asking, self._granted):
            for rid, request in list(table.items()):
                if request.expires < now:
                    del table[rid]

    async def _outcome(
        self, ctx: ServerRequestContext[Any], tool: ToolDef, request: PendingRequest
    ) -> Outcome:
        async with anyio.create_task_group() as tg:
            # Only a client the operator trusts answers for the person (--confirm-via client).
            if self.via == "client" and _can_elicit(ctx):
                tg.start_soon(self._elicit, ctx, tool, request)
            with anyio.move_on_after(self.timeout):
                await _decided(request)
            tg.cancel_scope.cancel()
        if not request.outcome.done():
            self._decide(request, "expired", "timeout")
        # Decided by now, or being decided on another thread this very moment.
        return await _decided(request)

    async def _elicit(
        self, ctx: ServerRequestContext[Any], tool: ToolDef, request: PendingRequest
    ) -> None:
        try:
            result = await ctx.session.elicit_form(
                question_text(tool, request), _NO_FIELDS, related_request_id=ctx.request_id
            )
        except Exception as exc:  # an error answer, no back-channel, a malformed result
            # The request stays pending: the CLI or the console may still decide it.
            log.warning("elicitation for %s failed (%s); it waits for approval", tool.name, exc)
            return
        self._decide(request, "approved" if result.action == "accept" else "denied", "elicitation")

    def _decide(self, request: PendingRequest, outcome: Outcome, by: str) -> None:
        # Decided already (approved, denied, expired): that outcome stands.
        with contextlib.suppress(UnknownRequestError):
            self.requests.decide(request.id, outcome, by=by)


def question_text(tool: ToolDef, request: PendingRequest) -> str:
    """What the person reads in the client, in either era."""
    # Every argument in full: the person approves the call that runs, not a clip of it.
    arguments, _ = shown_arguments(request.arguments or {}, clip=False)
    return (
        f"Allow the agent to run {tool.name}? Preset {tool.preset}, risk {tool.risk}. "
        f"Arguments: {arguments}. Accept runs it once; "
        f"decline refuses it. (Request {request.id}, sha256:{request.digest}; "
        f"`presets approve {request.id}` works too.)"
    )


def _question(tool: ToolDef, request: PendingRequest) -> dict[str, Any]:
    """The confirmation as a 2026-07-28 input request."""
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": question_text(tool, request),
            "requestedSchema": _NO_FIELDS,
        },
    }


def _asks_in_rounds(ctx: ServerRequestContext[Any] | None) -> bool:
    """Whether ``ctx`` is a 2026-07-28 request from a client that declared form elicitation."""
    if ctx is None or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    return _declares_form(ctx.session.client_capabilities)


def _declares_form(capabilities: types.ClientCapabilities | None) -> bool:
    """``elicitation: {}`` means form mode (the spec's default); a list of modes must name form."""
    if capabilities is None or capabilities.elicitation is None:
        return False
    elicitation = capabilities.elicitation
    return elicitation.form is not None or elicitation.url is None


def _can_elicit(ctx: ServerRequestContext[Any]) -> bool:
    """Whether a legacy-era client advertised form elicitation, and may be sent a request now.

    A 2026-07-28 connection has no channel for a request from the server: it is
    asked in rounds instead (``_asks_in_rounds``).
    """
    if ctx is None or not ctx.session.can_send_request:  # a call from outside MCP
        return False
    return _declares_form(ctx.session.client_capabilities)


async def _decided(request: PendingRequest) -> Outcome:
    # Shielded: cancelling this wait must not cancel the request's own future.
    outcome: Outcome = await asyncio.shield(asyncio.wrap_future(request.outcome))
    return outcome
