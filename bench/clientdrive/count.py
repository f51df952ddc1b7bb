"""Counting what a client sent its model: tokens, the prompt-cache prefix, our tools.

A request body is cut into **chunks** in the order a provider caches a prefix:
tools, then system, then messages:

- OpenAI chat (opencode): each entry of ``tools``, then each of ``messages``
  (the system prompt is the first message);
- Anthropic Messages (Claude Code): each entry of ``tools`` not marked
  ``defer_loading: true``, each block of ``system``, each of ``messages``;
  the ``defer_loading`` tools are not in the prefix (the provider appends them
  inline, where the conversation loaded them): they are chunks apart;
- OpenAI Responses (Codex): each entry of ``tools`` (a namespace tool is one
  entry), ``instructions``, then each item of ``input``.

A chunk is its JSON, compact (``,`` and ``:`` separators), keys in the order
the client sent them, with every ``cache_control`` marker taken out (a
client moves those markers from request to request; a provider matches the
prefix without them). Its tokens are counted with o200k_base
(``agent_presets.lib.budget.get_tokenizer``); a request's **input tokens** are
the sum over its chunks.

**Tokens from cache** (the prefix rule): a request's cached part is the
longest run of leading chunks equal, chunk by chunk, to the leading chunks of
some earlier request of the same run (any earlier request: a provider keeps
every prefix it has seen). A deferred tool's definition sits inline where it
was loaded: it counts as cached when an earlier request of the run already
sent the same definition deferred, else not. An Anthropic message whose
content is a string is counted as the one text block it stands for (Claude
Code sends the same message both ways from one request to the next). **Not from
cache** = input tokens - cached tokens. The unit is a whole chunk: a chunk
that differs from the earlier one in its last character counts whole, which
leaves out the partial-block reuse a provider may make inside one message
(cache blocks are coarse too: 128 tokens for OpenAI, breakpoints for
Anthropic).

**Our tool definitions**: the tools array's entries that are the MCP
server's tools: Claude Code's ``mcp__presets__TOOL``, opencode's
``srv_TOOL``, Codex's namespace tool ``mcp__presets`` (counted whole, as one
entry, with each sub-tool named). Their tokens per request, max and mean.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agent_presets.lib.budget import get_tokenizer

SERVER_PREFIX = {"chat": "srv_", "anthropic": "mcp__presets__", "responses": "mcp__presets"}


@dataclass
class Request:
    """One request as counted."""

    n: int
    fmt: str
    prefix: list[str]  # chunks in cache order
    tail: list[str]  # chunks outside the prefix (deferred tools)
    ours: dict[str, str]  # our tool's server name -> its definition's chunk
    results: list[str]  # the text of every tool result in the conversation
    input_tokens: int = 0
    cached_tokens: int = 0
    our_tool_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def chunk(value: Any) -> str:
    return json.dumps(_strip(value), separators=(",", ":"), ensure_ascii=False)


def _blocks(message: Any) -> Any:
    """An Anthropic message with its content as blocks: a string content is the same
    text block to the provider, and Claude Code sends one message both ways."""
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return {**message, "content": [{"type": "text", "text": message["content"]}]}
    return message


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            _text(p.get("text", p.get("content", ""))) for p in content if isinstance(p, dict)
        )
    return ""


def fmt_of(path: str) -> str | None:
    p = path.split("?")[0].rstrip("/")
    for end, fmt in (
        ("/chat/completions", "chat"),
        ("/messages", "anthropic"),
        ("/responses", "responses"),
    ):
        if p.endswith(end):
            return fmt
    return None


def parse(n: int, path: str, body: dict[str, Any]) -> Request | None:
    fmt = fmt_of(path)
    if fmt is None:
        return None
    tools = body.get("tools") or []
    ours: dict[str, str] = {}
    tail: list[str] = []
    results: list[str] = []
    if fmt == "chat":
        head = [chunk(t) for t in tools]
        for t in tools:
            name = (t.get("function") or {}).get("name", "")
            if name.startswith("srv_"):
                ours[name[len("srv_") :]] = chunk(t)
        head += [chunk(m) for m in body.get("messages") or []]
        results = [
            _text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"
        ]
    elif fmt == "anthropic":
        head = [chunk(t) for t in tools if not t.get("defer_loading")]
        tail = [chunk(t) for t in tools if t.get("defer_loading")]
        for t in tools:
            if t.get("name", "").startswith("mcp__presets__"):
                ours[t["name"][len("mcp__presets__") :]] = chunk(t)
        system = body.get("system")
        head += [chunk(b) for b in system] if isinstance(system, list) else [chunk(system or "")]
        head += [chunk(_blocks(m)) for m in body.get("messages") or []]
        for m in body.get("messages") or []:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                results += [
                    _text(b.get("content"))
                    for b in m["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
    else:
        head = [chunk(t) for t in tools]
        for t in tools:
            if t.get("type") == "namespace" and t.get("name") == "mcp__presets":
                whole = chunk(t)
                for sub in t.get("tools") or []:
                    ours[sub.get("name", "")] = chunk(sub)
                ours["(namespace)"] = whole
        if body.get("instructions"):
            head.append(chunk(body["instructions"]))
        items = body.get("input") or []
        head += [chunk(i) for i in (items if isinstance(items, list) else [items])]
        results = [
            _text(i.get("output"))
            for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
    return Request(n=n, fmt=fmt, prefix=head, tail=tail, ours=ours, results=results)


class Counter:
    """Token counts with a memo: most chunks repeat from request to request."""

    def __init__(self) -> None:
        self._tok = get_tokenizer()
        self._memo: dict[str, int] = {}

    def tokens(self, text: str) -> int:
        got = self._memo.get(text)
        if got is None:
            got = self._memo[text] = self._tok.count(text)
        return got

    @property
    def label(self) -> str:
        return self._tok.label


def count_run(requests: list[Request], counter: Counter) -> None:
    """Fill each request's input, cached and our-tool tokens (the rule in the docstring)."""
    seen: list[list[str]] = []
    inline: set[str] = set()  # deferred definitions already loaded into the conversation
    for r in requests:
        sizes = [counter.tokens(c) for c in r.prefix]
        r.input_tokens = sum(sizes) + sum(counter.tokens(c) for c in r.tail)
        best = 0
        for earlier in seen:
            k = 0
            for a, b in zip(r.prefix, earlier, strict=False):
                if a != b:
                    break
                k += 1
            best = max(best, k)
        r.cached_tokens = sum(sizes[:best]) + sum(counter.tokens(c) for c in r.tail if c in inline)
        seen.append(r.prefix)
        inline.update(r.tail)
        if r.fmt == "responses":
            whole = r.ours.get("(namespace)")
            r.our_tool_tokens = counter.tokens(whole) if whole else 0
        else:
            r.our_tool_tokens = sum(counter.tokens(c) for c in r.ours.values())


def defined_in_results(results: list[str], catalog: set[str]) -> set[str]:
    """Our tools whose definition a tool result carries: a signature (``NAME(``)
    or a JSON entry (``"name": "NAME"``)."""
    found: set[str] = set()
    for text in results:
        for m in re.finditer(r'([A-Za-z0-9_]+)\(|"name"\s*:\s*"([A-Za-z0-9_]+)"', text):
            name = m.group(1) or m.group(2)
            if name in catalog:
                found.add(name)
    return found
