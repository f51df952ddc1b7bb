"""Operator policy for a served tool surface: an allow-list, call budgets, an event log.

Adopted from the Space agent reference (DESIGN.md): whoever starts the server
can narrow the tool surface to an allow-list (unknown names are rejected when
the policy is built, never ignored), cap how many calls a session may make,
and keep an append-only log of every call with its latency. Each gate refuses
with its own message, which names the layer and who can open it, so a model
can tell "not in this context" from "not allowed here" from "budget used up".

This sits above the presets: presets decide what is active for the context;
the policy decides what this server exposes at all.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_presets.model import PresetValidationError, ToolCallError

if TYPE_CHECKING:
    from agent_presets.bootstrap import Presets

MAX_LOGGED_ERROR = 500


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


class ToolPolicy:
    """Gates in front of the tool registry. Thread-safe; one per served session set."""

    def __init__(
        self,
        *,
        allow: Allowed | None = None,
        max_calls: int | None = None,
        max_calls_per_tool: int | None = None,
        event_log: str | Path | None = None,
    ) -> None:
        for label, value in (("max_calls", max_calls), ("max_calls_per_tool", max_calls_per_tool)):
            if value is not None and value < 1:
                raise PresetValidationError(f"{label} must be at least 1, got {value}")
        self.allow = allow
        self.max_calls = max_calls
        self.max_calls_per_tool = max_calls_per_tool
        self.event_log = Path(event_log) if event_log is not None else None
        self._lock = threading.Lock()
        self.calls = 0
        self.calls_by_tool: dict[str, int] = {}
        self._log_handle: Any = None

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
                tools.update(a.mcp_name for t in preset.tool_ids if (a := adapters.get(t)))
                continue
            adapter = adapters.get(name) or next(
                (a for a in adapters.list() if a.mcp_name == name), None
            )
            if adapter is not None:
                tools.add(adapter.mcp_name)
                continue
            known = [*by_preset, *(a.mcp_name for a in adapters.list())]
            close = difflib.get_close_matches(name, known, n=1)
            hint = (
                f"; did you mean {close[0]!r}?"
                if close
                else "; `presets list` and `presets tools` show the names"
            )
            raise PresetValidationError(
                f"allow-list names {name!r}, which is neither a preset nor a tool{hint}"
            )
        return Allowed(frozenset(tools), tuple(given))

    # -- gates ---------------------------------------------------------------

    def allows(self, tool: str) -> bool:
        return self.allow is None or tool in self.allow.tools

    def admit(self, tool: str) -> None:
        """Count a call to ``tool`` or raise the ``GateError`` of the first closed layer."""
        if not self.allows(tool):
            raise GateError(
                "allow-list",
                f"Tool {tool!r} is not allowed on this server: it was started with an "
                "allow-list that does not include it. Only the user can change that, by "
                "restarting the server with --allow for the tool or its preset.",
            )
        with self._lock:
            if self.max_calls is not None and self.calls >= self.max_calls:
                raise GateError(
                    "budget",
                    f"The call budget of this server ({self.max_calls} tool calls) is used up. "
                    "Tell the user; a restart with a larger --max-calls resets it.",
                )
            used = self.calls_by_tool.get(tool, 0)
            if self.max_calls_per_tool is not None and used >= self.max_calls_per_tool:
                raise GateError(
                    "budget",
                    f"Tool {tool!r} has used its budget of {self.max_calls_per_tool} calls on "
                    "this server. Use other tools, or tell the user.",
                )
            self.calls += 1
            self.calls_by_tool[tool] = used + 1

    # -- event log -----------------------------------------------------------

    def record(
        self,
        tool: str,
        *,
        ok: bool,
        seconds: float,
        error: str | None = None,
        layer: str | None = None,
        preset: str | None = None,
    ) -> None:
        """Append one call to the event log (one JSON object per line)."""
        if self.event_log is None:
            return
        event = {
            "ts": time.time(),
            "tool": tool,
            "preset": preset,
            "ok": ok,
            "latency_ms": round(seconds * 1000, 3),
        }
        if error is not None:
            event["error"] = error[:MAX_LOGGED_ERROR]
        if layer is not None:
            event["gate"] = layer
        line = json.dumps(event, ensure_ascii=False) + "\n"
        with self._lock:
            if self._log_handle is None:
                self.event_log.parent.mkdir(parents=True, exist_ok=True)
                # Append-only: lines from earlier runs stay; a crash loses at most this line.
                self._log_handle = self.event_log.open("a", encoding="utf-8")
            self._log_handle.write(line)
            self._log_handle.flush()

    def close(self) -> None:
        with self._lock:
            if self._log_handle is not None:
                self._log_handle.close()
                self._log_handle = None

    def status(self) -> dict[str, Any]:
        return {
            "allow": list(self.allow.names) if self.allow else None,
            "calls": self.calls,
            "max_calls": self.max_calls,
            "max_calls_per_tool": self.max_calls_per_tool,
            "event_log": str(self.event_log) if self.event_log else None,
        }
