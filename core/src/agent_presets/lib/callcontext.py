"""The call context: what a tool handler may ask of the client that called it.

A handler that takes a ``ToolCall`` (a third parameter) finds the context in
``call.context`` when the server provides one (``presets serve`` always does;
a direct ``ToolDef.run`` call without ``context=`` gives None). This module
only says what a context can do: the MCP-backed implementation lives in the
server package, so the core and plugins never import ``mcp``.

Every method is synchronous and may be called from the thread a handler runs
on, whichever it is (a worker thread, or the server's event loop itself).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agent_presets.lib.model import ToolCallError

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
"""The MCP (syslog) log levels, lowest first."""

LOG_LEVELS: tuple[LogLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class UnsupportedByClientError(ToolCallError):
    """The client did not declare the capability a handler asked for (elicitation, sampling)."""


@dataclass(frozen=True)
class Elicitation:
    """The person's answer to ``CallContext.elicit``.

    ``action`` is ``"accept"`` (``content`` holds the answers), ``"decline"``
    or ``"cancel"``.
    """

    action: Literal["accept", "decline", "cancel"]
    content: Mapping[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (declined and cancelled both mean no)."""
        return self.action == "accept"


@runtime_checkable
class CallContext(Protocol):
    """What a handler may do for the call it serves, besides returning a result.

    ``progress`` and ``log`` never fail and never block for long: a client
    that did not ask for progress, or a log level the client filtered out,
    makes them do nothing. ``elicit``, ``sample`` and ``list_roots`` wait for
    the client's answer. When the client did not declare the capability, a
    legacy-era client gets ``UnsupportedByClientError`` (a ``ToolCallError``
    the model reads); a 2026-07-28 client has the call refused with the
    protocol's ``-32021`` (the handler never sees it), as that revision
    requires.

    In the modern protocol era (2026-07-28) the server cannot ask in the
    middle of a call: ``elicit``, ``sample`` and ``list_roots`` end this run
    of the handler, the client answers, and the handler runs again from the
    start with the answer waiting for the same question (its ``key``, by
    default its place in the run). So ask before changing anything; ask
    several questions in one round inside ``with context.together():``.
    """

    @property
    def client_capabilities(self) -> Mapping[str, Any]:
        """The capabilities the client declared, as their wire dict (``{}`` when none)."""
        ...

    @property
    def protocol_version(self) -> str:
        """The protocol version the client speaks."""
        ...

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled (the client's ``notifications/cancelled`` or
        ``tasks/cancel``): a handler that runs long checks it and stops its work."""
        ...

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (``notifications/progress``) if the client asked for it."""
        ...

    def log(self, level: LogLevel, message: str, **data: Any) -> None:
        """Send a log message (``notifications/message``) at ``level``, if the client listens."""
        ...

    def elicit(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None
    ) -> Elicitation:
        """Ask the person for input shaped by ``schema`` (a flat object schema).

        ``key`` names the question in a 2026-07-28 round (``inputRequests``).
        """
        ...

    def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any]],
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
        key: str | None = None,
    ) -> str:
        """Ask the client's model for a completion; returns its text.

        ``messages`` is a prompt, or a list of user texts or
        ``{"role": ..., "content": text}`` mappings.
        """
        ...

    def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``): ``[{"uri": ..., "name": ...}, ...]``."""
        ...

    def together(self) -> AbstractContextManager[None]:
        """Ask the block's questions in one round (2026-07-28; one by one before).

        Inside the block an unanswered question returns a stand-in (a
        cancelled elicitation, empty text, no roots); read the answers after it.
        """
        ...


def takes_context(function: Callable[..., Any]) -> bool:
    """Whether ``function`` declares a third positional parameter: how it asks for more.

    A tool handler's third parameter gets the ``ToolCall``, a content
    provider's ``render`` gets the call context; a function of two written
    before either existed keeps working unchanged.
    """
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in positional for p in parameters) >= 3


def unsupported(feature: str, tool: str | None = None) -> UnsupportedByClientError:
    """The one wording of "the client cannot do this", for every feature."""
    who = f"{tool}: " if tool else ""
    return UnsupportedByClientError(
        f"{who}the client does not support {feature}; continue without it or ask the user "
        "in the conversation instead"
    )
