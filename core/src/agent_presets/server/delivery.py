"""How a caller is served its tools: ``live`` (the list follows the context) or ``stable``.

Model providers cache a request's prefix in the order tools, system,
messages: a change to the tools array makes the provider process the whole
conversation again. And the 2026-07-28 revision forbids a tool list that
changes as a side effect of the caller's own requests. So a caller can be
served two ways:

- ``live``: its ``tools/list`` follows the context, with
  ``notifications/tools/list_changed`` (what every client got before);
- ``stable``: its ``tools/list`` follows only changes made *outside* its own
  tool calls (the host, an operator, the console, the CLI). A change its own
  call makes (``space_app_switch_surface``) leaves its list as it was; the
  call's result carries a *notice* instead (``notice_text``): the tools that
  became active, as compact signatures to run through ``presets_call``, the
  listed ones no longer active, and the new presets' guidance. The notice is
  appended to the conversation, so the provider's cached prefix holds.

``auto`` (the default) picks per caller from what it says of itself
(``choose``): ``stable`` for the 2026-07-28 era and for the legacy clients
in ``STABLE_CLIENTS``, ``live`` for any other legacy client. A server forces
one with ``presets serve --delivery``, a token with ``presets tokens create
--delivery``. docs/clients.md has the table per client, with figures.

This module imports nothing of the MCP SDK: the listing and the notices are
plain data, so the fast start (before the SDK loads) can compute them too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, Literal

from agent_presets.lib.model import DANGEROUS_RISKS, Resolution, ToolDef

DeliveryMode = Literal["auto", "stable", "live"]
Delivery = Literal["stable", "live"]
DELIVERY_MODES: Final = ("auto", "stable", "live")


@dataclass(frozen=True)
class StableClient:
    """A legacy-era client, by ``clientInfo.name``, that ``auto`` serves ``stable``."""

    name: str
    why: str


STABLE_CLIENTS: Final = (
    StableClient(
        "opencode",
        "opencode puts every listed tool in its model's tools array: each list change "
        "makes the provider process the conversation again",
    ),
    StableClient(
        "codex-mcp-client",
        "Codex lists once, at start, and never again: a changed list is never seen",
    ),
    StableClient(
        "claude-code",
        "Claude Code re-lists on a change; without its tool search each change re-processes "
        "the conversation",
    ),
)
"""Legacy-era clients served ``stable`` by ``auto`` (2026-07-28 clients always are)."""

_STABLE_NAMES: Final = frozenset(c.name for c in STABLE_CLIENTS)


def choose(mode: DeliveryMode, *, modern: bool, client: str | None) -> Delivery:
    """How to serve a caller: ``mode`` unless ``auto``, then by era and client name."""
    if mode != "auto":
        return mode
    if modern or client in _STABLE_NAMES:
        return "stable"
    return "live"


def check_mode(value: str, where: str) -> DeliveryMode:
    """``value`` as a delivery mode, or a ``ValueError`` that says what is allowed."""
    if value not in DELIVERY_MODES:
        raise ValueError(f"{where}: delivery {value!r} is not one of: {', '.join(DELIVERY_MODES)}")
    return value  # type: ignore[return-value]


# ------------------------------------------------------------------ the agent's own calls

_calling: ContextVar[str | None] = ContextVar("agent_presets_calling", default=None)


@contextmanager
def agent_call(principal: str) -> Iterator[None]:
    """Mark the block as ``principal``'s own tool call: what it changes is not "outside"."""
    token = _calling.set(principal)
    try:
        yield
    finally:
        _calling.reset(token)


def calling() -> str | None:
    """The principal whose tool call is running here (in this context), or None."""
    return _calling.get()


# ------------------------------------------------------------------ what a principal is listed


@dataclass(frozen=True)
class Listed:
    """What a stable principal's list shows: a resolution and its tool defs, and a version."""

    resolution: Resolution
    defs: tuple[ToolDef, ...]
    version: int
    context: Mapping[str, Any]
    """The context it was listed in (a budget orders presets by it)."""

    def tool(self, name: str) -> ToolDef | None:
        return next((d for d in self.defs if d.name == name), None)


Current = Callable[[str], tuple[Resolution, tuple[ToolDef, ...], Mapping[str, Any]]]
"""A principal's resolution, preset tool defs and context now."""


class Listings:
    """Each stable principal's listed tools, and what its agent was last told.

    Invariant: a principal's ``Listed`` changes only in ``refresh`` called
    outside that principal's own tool calls (``agent_call``); its version
    grows by one at each change, so a change notice goes out only when the
    list really changed. ``told`` is what the agent knows is active: the
    listed resolution at first, then each notice's. Thread-safe: changes
    arrive from any thread.
    """

    def __init__(self, current: Current) -> None:
        self._current = current
        self._lock = threading.Lock()
        self._listed: dict[str, Listed] = {}
        self._told: dict[str, Resolution] = {}
        self._shown: dict[str, set[str]] = {}

    def listed(self, principal: str) -> Listed:
        """``principal``'s listed tools; the first look fixes them at what is active now."""
        with self._lock:
            held = self._listed.get(principal)
            if held is None:
                resolution, defs, context = self._current(principal)
                held = self._listed[principal] = Listed(resolution, defs, 0, context)
            return held

    def refresh(self) -> None:
        """A change from somewhere: re-read every listed principal but the one calling."""
        own = calling()
        with self._lock:
            for principal, held in list(self._listed.items()):
                if principal == own:
                    continue
                try:
                    resolution, defs, context = self._current(principal)
                except Exception:  # served as before until its next change
                    continue
                if resolution != held.resolution or _names(defs) != _names(held.defs):
                    self._listed[principal] = Listed(resolution, defs, held.version + 1, context)

    def shown(self, principal: str) -> frozenset[str]:
        """The tools whose signatures a notice already gave ``principal``."""
        with self._lock:
            return frozenset(self._shown.get(principal, ()))

    def mark_shown(self, principal: str, names: Sequence[str]) -> None:
        with self._lock:
            self._shown.setdefault(principal, set()).update(names)

    def news(self, principal: str) -> tuple[Resolution, Resolution, tuple[ToolDef, ...]] | None:
        """``(told, now, defs)`` when what is active changed since the agent was last told.

        Marks ``now`` as told: each change is told once.
        """
        listed = self.listed(principal)
        resolution, defs, _context = self._current(principal)
        with self._lock:
            told = self._told.get(principal, listed.resolution)
            if told == resolution:
                return None
            self._told[principal] = resolution
            return told, resolution, defs


def _names(defs: Sequence[ToolDef]) -> tuple[str, ...]:
    return tuple(d.name for d in defs)


# ------------------------------------------------------------------ the notice


def signature(tool: ToolDef) -> str:
    """``name(arg: type, opt?: type) - first sentence``: a tool in one line, for the model.

    Compact on purpose: the notice is read once, in the conversation, and
    the full schema is one ``presets_search`` away; ``presets_call`` checks
    the arguments against it and names a wrong one.
    """
    schema = tool.input_schema if isinstance(tool.input_schema, Mapping) else {}
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    required = set(schema.get("required") or ()) if isinstance(schema, Mapping) else set()
    args = []
    if isinstance(properties, Mapping):
        for name, spec in properties.items():
            mark = "" if name in required else "?"
            args.append(f"{name}{mark}: {_type_of(spec)}")
    description = _first_sentence(tool.description or tool.title or "")
    line = f"{tool.name}({', '.join(args)})"
    return f"{line} - {description}" if description else line


def _type_of(spec: Any) -> str:
    if not isinstance(spec, Mapping):
        return "any"
    if "enum" in spec and isinstance(spec["enum"], Sequence):
        values = [v for v in spec["enum"] if isinstance(v, str | int | float | bool)]
        shown = "|".join(_literal(v) for v in values[:8])
        return shown + ("|..." if len(values) > 8 else "")
    kind = spec.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"{_type_of(spec.get('items'))}[]"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = spec.get(key)
        if isinstance(options, Sequence) and not isinstance(options, str):
            return "|".join(_type_of(o) for o in options)
    return "any"


def _literal(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower()


DESCRIPTION_WORDS: Final = 16
"""A signature's description: its first sentence, cut to this many words."""


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    sentence = text if end < 0 else text[: end + 1]
    words = sentence.split(" ")
    return (
        sentence if len(words) <= DESCRIPTION_WORDS else " ".join(words[:DESCRIPTION_WORDS]) + "..."
    )


def risky(tool: ToolDef) -> bool:
    """Whether ``tool`` is reached through ``presets_call_risky`` (its preset's risk)."""
    return tool.risk in DANGEROUS_RISKS


@dataclass(frozen=True)
class Notice:
    """What a stable caller is told after a call that changed what is active."""

    context: Mapping[str, Any]
    added: tuple[ToolDef, ...]
    """Newly active tools that are not in the caller's list: run them through presets_call."""
    back: tuple[str, ...]
    """Newly active tools that are in the caller's list: call them directly again."""
    again: tuple[str, ...]
    """Newly active tools whose signatures an earlier notice gave: named only."""
    gone: tuple[str, ...]
    """Tools the caller knew of that are no longer active."""
    guidance: tuple[str, ...]
    """The newly active presets' prompt fragments."""


def make_notice(
    told: Resolution,
    now: Resolution,
    defs: Sequence[ToolDef],
    listed: Sequence[str],
    context: Mapping[str, Any],
    visible: Callable[[str], bool],
    name_of: Callable[[str], str | None],
    shown: Collection[str] = (),
) -> Notice | None:
    """The notice for a change from ``told`` to ``now`` (None when the caller sees no change).

    ``defs``: ``now``'s tool defs; ``listed``: the names in the caller's
    list; ``visible``: whether the caller may use a tool of that name (its
    allow-lists); ``name_of``: a tool id's MCP name; ``shown``: tools whose
    signatures an earlier notice gave (named again, not described again: the
    conversation holds them).
    """
    before = set(told.tool_ids)
    on_list = set(listed)
    added: list[ToolDef] = []
    back: list[ToolDef] = []
    for tool in defs:
        if tool.managed_source in before or not visible(tool.name):
            continue
        (back if tool.name in on_list else added).append(tool)
    now_names = {d.name for d in defs}
    knew = {name for tool_id in told.tool_ids if (name := name_of(tool_id)) is not None}
    gone = sorted(n for n in knew - now_names if visible(n))
    old_presets = {a.name for a in told.active_presets}
    seen_presets = {d.preset for d in defs if visible(d.name)}
    guidance = tuple(
        f.prompt
        for f in now.prompt_fragments
        if f.preset not in old_presets and f.prompt and f.preset in seen_presets
    )
    if not added and not back and not gone and not guidance:
        return None
    again = tuple(t.name for t in added if t.name in shown)
    return Notice(
        dict(context),
        tuple(t for t in added if t.name not in shown),
        tuple(t.name for t in back),
        again,
        tuple(gone),
        guidance,
    )


def notice_text(notice: Notice, call_tool: str, risky_call_tool: str) -> str:
    """The notice as the model reads it: one text block appended to the call's result."""
    shown = ", ".join(
        f"{k}={'none' if v is None else _literal(v)}" for k, v in notice.context.items()
    )
    lines = [f"[presets] Context now: {shown}."]
    if notice.added:
        lines.append(f'New tools, not in your list: run with {call_tool} {{"name", "arguments"}}')
        if any(risky(t) for t in notice.added):
            lines[-1] += f" ([risky] ones with {risky_call_tool})"
        lines[-1] += ":"
        for tool in notice.added:
            lines.append(f"- {signature(tool)}{' [risky]' if risky(tool) else ''}")
    if notice.again:
        lines.append(f"Active again, run with {call_tool}: " + ", ".join(notice.again) + ".")
    if notice.back:
        lines.append("Active again, call directly: " + ", ".join(notice.back) + ".")
    if notice.gone:
        lines.append("Now inactive: " + ", ".join(notice.gone) + ".")
    for text in notice.guidance:
        lines.append(f"Guidance: {text}")
    return "\n".join(lines)
