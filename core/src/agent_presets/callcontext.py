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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agent_presets.model import ToolCallError

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
    makes them do nothing. ``elicit`` and ``sample`` wait for the client's
    answer and raise ``UnsupportedByClientError`` (a ``ToolCallError`` the
    model reads) when the client did not declare the capability.

    In the modern protocol era (2026-07-28) the server cannot ask in the
    middle of a call: ``elicit`` and ``sample`` end this run of the handler,
    the client answers, and the handler runs again from the start with the
    answer waiting for the same question. So ask before changing anything.
    """

    @property
    def client_capabilities(self) -> Mapping[str, Any]:
        """The capabilities the client declared, as their wire dict (``{}`` when none)."""
        ...

    @property
    def protocol_version(self) -> str:
        """The protocol version the client speaks."""
        ...

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress (``notifications/progress``) if the client asked for it."""
        ...

    def log(self, level: LogLevel, message: str, **data: Any) -> None:
        """Send a log message (``notifications/message``) at ``level``, if the client listens."""
        ...

    def elicit(self, message: str, schema: Mapping[str, Any]) -> Elicitation:
        """Ask the person for input shaped by ``schema`` (a flat object schema)."""
        ...

    def sample(
        self,
        messages: str | Sequence[str | Mapping[str, Any]],
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> str:
        """Ask the client's model for a completion; returns its text.

        ``messages`` is a prompt, or a list of user texts or
        ``{"role": ..., "content": text}`` mappings.
        """
        ...


def unsupported(feature: str, tool: str | None = None) -> UnsupportedByClientError:
    """The one wording of "the client cannot do this", for every feature."""
    who = f"{tool}: " if tool else ""
    return UnsupportedByClientError(
        f"{who}the client does not support {feature}; continue without it or ask the user "
        "in the conversation instead"
    )
