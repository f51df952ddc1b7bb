"""The MCP-backed ``CallContext``: progress, logging, elicitation and sampling for a handler.

Where the handler runs decides how a method reaches the client. On a worker
thread (where the server runs every sync handler that takes a context) it hands
the coroutine to the server's loop and waits for it, so a notification is
on its way before the handler goes on (and before the result). On the loop
itself (only when ``ToolCalls.run`` is used directly without ``offload``) it
cannot wait:
``progress`` and ``log`` are queued and flushed when the handler returns,
before the result; ``elicit`` and ``sample`` raise ``NeedsThread``, and the
calls layer runs the call again on a worker thread (and that tool there from
then on). Handlers therefore ask before they change anything, which the
modern era requires anyway: there ``elicit``, ``sample`` and ``list_roots``
end the run with an ``input_required`` result and the client's retry runs the
handler again (``rounds.py``), and one the client did not declare the
capability for is refused with ``-32021`` rather than the legacy era's
``UnsupportedByClientError``.

An async handler (``ToolDef.run_async``, an upstream's forward) is awaited
on the loop: its ``progress`` and ``log`` go out at once, as tasks the
server waits for before the result, and a legacy-era ``elicit`` or
``sample``, which would have to block the loop, is a tool error.

A context is built only for a handler that can receive it (``ToolDef``'s
``accepts_context``), and building one only stores references.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Final

import mcp_types as types
from mcp.server.connection import allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agent_presets.lib.callcontext import (
    LOG_LEVELS,
    CallContext,
    Elicitation,
    LogLevel,
    unsupported,
)
from agent_presets.lib.model import ToolCallError
from agent_presets.server.mcp.calls import NeedsThread
from agent_presets.server.mcp.rounds import InputRequired, MissingCapability, Rounds

ANSWER_TIMEOUT: Final = 600.0
"""Seconds a legacy-era elicitation or sampling request waits for the client's answer.

A bound, so a call whose client went away does not hold a worker thread forever."""

LOG_LEVEL_KEY: Final = "agent_presets.log_level"
"""Where ``logging/setLevel`` keeps a legacy connection's level (``Connection.state``)."""


def connection_state(ctx: ServerRequestContext[Any]) -> dict[str, Any] | None:
    # The SDK keeps the connection behind the per-request session (see fanout._key).
    connection = getattr(ctx.session, "_connection", None)
    state = getattr(connection, "state", None)
    return state if isinstance(state, dict) else None


class McpCallContext:
    """A ``CallContext`` for one ``tools/call`` request (see the module docstring).

    Also for one ``prompts/get`` of a provider that asks (``catalog.py``), on
    2026-07-28 connections only: there it asks in rounds as a tool does.
    """

    __slots__ = (
        "_asked",
        "_awaited",
        "_cancelled",
        "_ctx",
        "_doing",
        "_gathered",
        "_loop",
        "_loop_thread",
        "_queued",
        "_rounds",
        "_sending",
        "_waiting",
        "tool",
    )

    def __init__(
        self,
        ctx: ServerRequestContext[Any],
        tool: str,
        params: types.CallToolRequestParams | types.GetPromptRequestParams | None = None,
        rounds: Rounds | None = None,
        *,
        awaited: bool = False,
        doing: str = "call this tool",
    ) -> None:
        self._ctx = ctx
        self.tool = tool
        """The tool's name (or the prompt's, for a provider's context): said in its messages."""
        self._doing = doing
        """What a refusal for a missing capability says the client wanted to do."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._queued: list[Coroutine[Any, Any, Any]] = []
        self._awaited = awaited
        """The handler is async, awaited on the loop: a notice goes out while it runs."""
        self._sending: list[asyncio.Task[Any]] = []
        self._waiting: set[concurrent.futures.Future[Any]] = set()
        self._cancelled = False
        self._asked = 0
        self._rounds = rounds if rounds is not None else Rounds.of(params)
        self._gathered: dict[str, dict[str, Any]] | None = None

    # -- facts ----------------------------------------------------------------

    @property
    def protocol_version(self) -> str:
        return self._ctx.session.protocol_version

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def client_capabilities(self) -> Mapping[str, Any]:
        caps = self._ctx.session.client_capabilities
        return {} if caps is None else caps.model_dump(by_alias=True, exclude_none=True)

    # -- notifications -----------------------------------------------------

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        self._send(self._ctx.session.report_progress(done, total, message), wait=False)

    def log(self, level: LogLevel, message: str, **data: Any) -> None:
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        if not self._log_allowed(level):
            return
        payload: Any = {"message": message, **data} if data else message
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level=level, data=payload, logger=self.tool
            )
        )
        # Request-scoped: it rides this call's response stream, where the spec wants it.
        self._send(
            self._ctx.session.send_notification(notification, self._ctx.request_id), wait=False
        )

    def _log_allowed(self, level: LogLevel) -> bool:
        if self.modern:  # a per-request opt-in in the request's _meta
            allowed = allowed_log_levels(self.protocol_version, self._ctx.meta)
            return level in allowed
        state = connection_state(self._ctx)
        floor = state.get(LOG_LEVEL_KEY) if state is not None else None
        return floor is None or LOG_LEVELS.index(level) >= LOG_LEVELS.index(floor)

    # -- requests to the client ------------------------------------------------

    def elicit(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None
    ) -> Elicitation:
        if "elicitation" not in self.client_capabilities:
            self._missing("elicitation", {"elicitation": {"form": {}}})
        params = {"mode": "form", "message": message, "requestedSchema": dict(schema)}
        legacy = self._ask_legacy(
            lambda: types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
            ),
            types.ElicitResult,
        )
        answer = self._ask(
            "elicitation/create", params, legacy, "elicitation", key, _stand_in_elicitation
        )
        result = types.ElicitResult.model_validate(answer)
        return Elicitation(result.action, result.content)

    def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any]],
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
    ) -> str:
        if "sampling" not in self.client_capabilities:
            self._missing("sampling", {"sampling": {}})
        params: dict[str, Any] = {"messages": _sampling_messages(messages), "maxTokens": max_tokens}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if temperature is not None:
            params["temperature"] = temperature
        legacy = self._ask_legacy(
            lambda: types.CreateMessageRequest(
                params=types.CreateMessageRequestParams.model_validate(params)
            ),
            types.CreateMessageResult,
        )
        answer = self._ask(
            "sampling/createMessage", params, legacy, "sampling", key, _stand_in_sample
        )
        content = answer.get("content")
        blocks = content if isinstance(content, list) else [content]
        return "".join(
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )

    def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        if "roots" not in self.client_capabilities:
            self._missing("roots", {"roots": {}})
        legacy = self._ask_legacy(types.ListRootsRequest, types.ListRootsResult)
        answer = self._ask("roots/list", {}, legacy, "roots", key, _stand_in_roots)
        roots = types.ListRootsResult.model_validate(answer).roots
        return [r.model_dump(by_alias=True, mode="json", exclude_none=True) for r in roots]

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """Ask every question of the block in one round (2026-07-28); one by one otherwise.

        Inside the block an unanswered question returns a stand-in (a
        cancelled elicitation, empty text, no roots) and the round ends at
        the block's end with all of them, so read the answers after it.
        """
        if not self.modern or self._gathered is not None:
            yield
            return
        self._gathered = {}
        try:
            yield
            if self._gathered:
                raise InputRequired(self._gathered, self._rounds)
        finally:
            self._gathered = None

    def _missing(self, feature: str, required: dict[str, Any]) -> None:
        """The client did not declare ``feature``: ``-32021`` now, a tool error before 2026."""
        if self.modern:
            raise MissingCapability(feature, required, self.tool, self._doing)
        raise unsupported(feature, self.tool)

    def _ask(
        self,
        method: str,
        params: dict[str, Any],
        legacy: Coroutine[Any, Any, dict[str, Any]],
        feature: str,
        key: str | None,
        stand_in: Callable[[], dict[str, Any]],
    ) -> dict[str, Any]:
        self._asked += 1
        if not self.modern:
            try:
                return self._send(legacy, wait=True)  # type: ignore[no-any-return]
            except NoBackChannelError:  # a transport with no way to ask (stateless HTTP)
                raise unsupported(f"{feature} on this connection", self.tool) from None
            except MCPError as exc:
                raise ToolCallError(
                    f"{self.tool}: the client did not answer the {feature} request ({exc}); "
                    "continue without it or ask the user in the conversation"
                ) from None
        legacy.close()
        key = key if key is not None else f"{method.split('/')[0]}-{self._asked}"
        answer = self._rounds.answers.get(key)
        if isinstance(answer, Mapping) and _answers(method, answer):
            return dict(answer)
        # Not answered yet, or answered with something that is no answer: asked (again).
        self._rounds.answers.pop(key, None)
        request = {"method": method, "params": params}
        if self._gathered is not None:
            self._gathered[key] = request
            return stand_in()
        raise InputRequired({key: request}, self._rounds)

    async def _ask_legacy(self, request: Callable[[], Any], result_type: Any) -> dict[str, Any]:
        """Send ``request()`` to the client on this call's stream; its answer as a wire dict.

        The request is built here, in the legacy era only, as the modern era never sends it.
        """
        result = await self._ctx.session.send_request(
            request(),
            result_type,
            request_read_timeout_seconds=ANSWER_TIMEOUT,
            metadata=ServerMessageMetadata(related_request_id=self._ctx.request_id),
        )
        answer: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer

    # -- reaching the loop ----------------------------------------------------

    def _send(self, coro: Coroutine[Any, Any, Any], *, wait: bool) -> Any:
        if self._cancelled:  # nobody hears a cancelled call: send nothing more
            coro.close()
            if wait:
                raise self._cancelled_error()
            return None
        if threading.get_ident() != self._loop_thread:
            future = asyncio.run_coroutine_threadsafe(coro, self._loop)
            self._waiting.add(future)
            try:
                return future.result()
            except concurrent.futures.CancelledError:
                raise self._cancelled_error() from None
            finally:
                self._waiting.discard(future)
        if self._awaited:
            if wait:  # it would stop the loop that carries the question and its answer
                coro.close()
                raise ToolCallError(
                    f"{self.tool}: an async handler cannot wait for the client's answer "
                    "through its call context; ask in a sync handler, which runs on a thread"
                )
            # Sent while the handler awaits; flush() waits for these before the result.
            self._sending.append(self._loop.create_task(coro))
            return None
        if wait:
            # This run is abandoned and runs again on a thread: what it queued would repeat.
            coro.close()
            for queued in self._queued:
                queued.close()
            self._queued.clear()
            raise NeedsThread
        self._queued.append(coro)
        return None

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled (a handler forwarding the call stops waiting)."""
        return self._cancelled

    def cancel(self) -> None:
        """The call was cancelled: end what the handler waits for, and send nothing more.

        A handler waiting on a worker thread for the client's answer (an
        elicitation the person will never see now) gets a ``ToolCallError``
        at once, instead of holding its thread until ``ANSWER_TIMEOUT``.
        Called on the server's loop.
        """
        self._cancelled = True
        for future in list(self._waiting):
            future.cancel()
        for queued in self._queued:
            queued.close()
        self._queued.clear()
        for sending in self._sending:
            sending.cancel()
        self._sending.clear()

    def _cancelled_error(self) -> ToolCallError:
        return ToolCallError(f"{self.tool}: the call was cancelled; nothing more is sent")

    async def flush(self) -> None:
        """Send what a handler on the loop queued (the server calls this before answering)."""
        queued, self._queued = self._queued, []
        for coro in queued:
            await coro
        sending, self._sending = self._sending, []
        for task in sending:
            await task


_RESULTS: Final[Mapping[str, Any]] = {
    "elicitation/create": types.ElicitResult,
    "sampling/createMessage": types.CreateMessageResult,
    "roots/list": types.ListRootsResult,
}


def _answers(method: str, answer: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is a well-formed answer to a ``method`` request."""
    try:
        _RESULTS[method].model_validate(dict(answer))
    except ValueError:
        return False
    return True


def _stand_in_elicitation() -> dict[str, Any]:
    return {"action": "cancel"}


def _stand_in_sample() -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": ""}, "model": ""}


def _stand_in_roots() -> dict[str, Any]:
    return {"roots": []}


def _sampling_messages(messages: str | Sequence[str | Mapping[str, Any]]) -> list[dict[str, Any]]:
    items: Sequence[str | Mapping[str, Any]] = [messages] if isinstance(messages, str) else messages
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"role": "user", "content": {"type": "text", "text": item}})
        else:
            content = item.get("content")
            if isinstance(content, str):
                content = {"type": "text", "text": content}
            out.append({"role": item.get("role", "user"), "content": content})
    return out


def set_level_handler() -> Any:
    """The ``logging/setLevel`` handler: the connection's floor for ``CallContext.log``."""

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> dict[str, Any]:
        state = connection_state(ctx)
        if state is not None:
            state[LOG_LEVEL_KEY] = params.level
        return {}

    return set_level


def _satisfies_the_protocol(context: McpCallContext) -> CallContext:
    return context  # mypy checks here that McpCallContext is a CallContext
