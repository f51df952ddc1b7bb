"""What the scripted model does next: the client-neutral half of ``fake_model.py``.

A script is ``{"prompt": TEXT, "steps": [STEP, ...]}``; a step is
``{"tool": SUFFIX, "args": {...}, "query": WORDS, "say": TEXT}``. For step k
the model uses what it was told, as a real model does:

1. it calls the offered tool whose name ends with SUFFIX, if there is one
   (a tool the client defers, such as Claude Code's, is loaded first with the
   client's own search, ``select:NAME``);
2. else, if a tool result of the conversation so far names a tool ending
   with SUFFIX (a server's notice or search result) and a call tool is offered
   (a name ending ``presets_call``, or FastMCP's ``call_tool``), it calls that
   with ``{"name": NAME, "arguments": ARGS}``; ``presets_call_risky`` when the
   text around the name says the tool needs it;
3. else, if a search tool is offered (``presets_search``, FastMCP's
   ``search_tools``), it searches with the step's query and goes on at the
   next request;
4. else, if the client has a tool search of its own (Claude Code's
   ``ToolSearch``), it searches there by the suffix's words (a client may
   announce a change one request late);
5. else it answers ``MISSING SUFFIX``.

At most ``MAX_TRIES`` loads and searches a step. After the last step it
answers ``SCRIPT_DONE``. Progress is read back from the conversation: the
model's call ids say which step a call served (``..._s{k}_{n}`` a step's call,
``..._h{k}_{n}`` a helper: a load or a search), and the clients send them
back unchanged with the results.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

MAX_TRIES = 3
SEARCH_SAY = "I don't see a tool for that yet; let me search for one."
LOAD_SAY = "Let me load that tool first."
_SEQ = itertools.count(1)
_STEP_ID = re.compile(r"_s(\d+)_\d+$")


@dataclass
class View:
    """One model request, as the scripted model reads it (built per wire format)."""

    scripted: bool
    offered: list[str]  # names the model may call (the client's full names)
    results: list[tuple[str, str]]  # (call id, text) of every tool result, in order
    needs_load: set[str] = field(default_factory=set)  # offered, but to load first
    client_search: str | None = None  # the client's own tool search (Claude Code's)


@dataclass
class Action:
    """A call (``name``, ``input``, ``call_id``) with ``say`` text, or a text reply."""

    name: str | None = None
    input: dict[str, Any] | None = None
    call_id: str = ""
    say: str = ""
    reply: str | None = None
    step: int = 0
    how: str = ""  # direct | via-call | search | load | client-search | missing | done | other


def step_of(view: View) -> int:
    """How many script steps have a result: the model's step ids seen back."""
    done = {int(m.group(1)) for cid, _ in view.results if (m := _STEP_ID.search(cid))}
    return len(done)


def tries_of(view: View, step: int) -> int:
    return sum(1 for cid, _ in view.results if f"_h{step}_" in cid)


def _ends(names: list[str], suffix: str) -> list[str]:
    return [n for n in names if n.endswith(suffix)]


def _call_tool(offered: list[str], risky: bool) -> str | None:
    if risky:
        found = _ends(offered, "presets_call_risky")
        if found:
            return found[0]
    found = _ends(offered, "presets_call") or _ends(offered, "call_tool")
    return found[0] if found else None


def _search_tool(offered: list[str]) -> str | None:
    found = _ends(offered, "presets_search") or _ends(offered, "search_tools")
    return found[0] if found else None


def told_name(results: list[tuple[str, str]], suffix: str) -> tuple[str, bool] | None:
    """The last tool name ending with ``suffix`` that a tool result names, and
    whether the text around it says to use ``presets_call_risky``."""
    pattern = re.compile(
        r"(?<![A-Za-z0-9_])([A-Za-z0-9_]*" + re.escape(suffix) + r")(?![A-Za-z0-9_])"
    )
    for _, raw in reversed(results):
        text = raw.replace("\\n", "\n")  # a notice inside JSON (structured content) has "\n"
        for m in reversed(list(pattern.finditer(text))):
            name = m.group(1)
            line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
            lowered = line.lower()
            if name.endswith(("presets_call", "presets_search")) or (
                "no longer" in lowered or "inactive" in lowered
            ):
                continue  # not a tool to run: the call tools, a notice's "now inactive" line
            # What is said of this tool: the rest of its line (a notice's signature and its
            # [risky] mark) up to the next search-result entry.
            ends = [i for i in (text.find("\n", m.end()), text.find('"name": "', m.end())) if i > 0]
            window = text[m.start() : min(ends, default=len(text))]
            return name, "[risky]" in window or "call_risky" in window
    return None


def decide(script: dict[str, Any], view: View, prefix: str) -> Action:
    """The model's answer to one request. ``prefix`` starts the call ids the
    client expects (``toolu_`` for Anthropic, ``call_`` otherwise)."""
    steps = script["steps"]
    if not view.scripted:
        return Action(reply="ok", how="other")
    k = step_of(view)
    if k >= len(steps):
        return Action(reply="SCRIPT_DONE", step=k, how="done")
    step = steps[k]
    want, args = step["tool"], step.get("args", {})
    tries = tries_of(view, k)
    step_id = f"{prefix}s{k}_{next(_SEQ)}"
    helper_id = f"{prefix}h{k}_{next(_SEQ)}"
    say = step.get("say", "")

    def use(name: str, arguments: dict[str, Any], how: str) -> Action:
        if name in view.needs_load and view.client_search:
            if tries >= MAX_TRIES:
                return Action(reply=f"UNLOADABLE {name}", step=k, how="missing")
            return Action(
                name=view.client_search,
                input={"query": f"select:{name}"},
                call_id=helper_id,
                say=LOAD_SAY,
                step=k,
                how="load",
            )
        return Action(name=name, input=arguments, call_id=step_id, say=say, step=k, how=how)

    direct = _ends(view.offered, want)
    if direct:
        return use(direct[0], args, "direct")
    told = told_name(view.results, want)
    if told:
        caller = _call_tool(view.offered, told[1])
        if caller:
            return use(caller, {"name": told[0], "arguments": args}, "via-call")
    if tries < MAX_TRIES:
        search = _search_tool(view.offered)
        if search:
            query = step.get("query") or " ".join(w for w in want.split("_") if w)
            action = use(search, {"query": query}, "search")
            if action.how == "search":  # a helper, not the step's call
                action.call_id, action.say = helper_id, SEARCH_SAY
            return action
        if view.client_search:
            return Action(
                name=view.client_search,
                input={"query": " ".join(w for w in want.split("_") if w), "max_results": 5},
                call_id=helper_id,
                say=SEARCH_SAY,
                step=k,
                how="client-search",
            )
    return Action(reply=f"MISSING {want}", step=k, how="missing")
