"""A scripted model on 127.0.0.1 that speaks the three wire APIs the driven clients use.

usage: fake_model.py PORT SCRIPT.json LOG.jsonl BODIES_DIR
  PORT 0 picks a free port; the port in use is written to LOG.jsonl.port.
  FAKE_THINK_S (environment): seconds before each scripted answer (default 0).

- ``POST .../chat/completions``: OpenAI chat completions (opencode's AI SDK
  provider ``@ai-sdk/openai-compatible``), streamed or not;
- ``POST .../messages``: the Anthropic Messages API (Claude Code), streamed
  as Server-Sent Events or not; ``.../count_tokens`` answers a count;
- ``POST .../responses``: the OpenAI Responses API (Codex, which speaks no
  other), streamed as events.
``GET .../models`` answers a one-model list.

What it answers is ``steps.decide`` (the script's next step, by the rules in
that module's docstring); this file only reads each wire format into a
``steps.View`` and writes the answer back in it, with the step's ``say`` as
assistant text beside each call. Every POST body is kept whole as
``BODIES_DIR/NNN.json`` (``{"path", "body"}``, the body exactly as the client
sent it, credentials left out), and one line per request goes to LOG.jsonl.

Derived from the agent-presets client drivers' fake models (opencode-drive's
``scripted_llm.py``, claudecode-drive's ``fake_anthropic.py``, codex-drive's
``responses_llm.py``); extended with the indirect path (a notice or search
result, then ``presets_call``) and assistant text, which those lack.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from steps import Action, View, decide  # run as a script: its folder is on sys.path

PORT, LOG, BODIES = int(sys.argv[1]), sys.argv[3], sys.argv[4]
SCRIPT = json.loads(open(sys.argv[2]).read())  # noqa: SIM115 (read once, at start)
os.makedirs(BODIES, exist_ok=True)
THINK = float(os.environ.get("FAKE_THINK_S", "0"))
REQ = itertools.count(1)
SEQ = itertools.count(1)
LOCK = threading.Lock()
MARK = SCRIPT["prompt"][:40]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for p in content:
            if not isinstance(p, dict):
                continue
            if "text" in p:
                out.append(str(p.get("text", "")))
            elif p.get("type") == "tool_result":
                out.append(text_of(p.get("content")))
            elif p.get("type") == "tool_reference":
                out.append(f"<tool_reference {p.get('tool_name')}>")
        return " ".join(out)
    if isinstance(content, dict):
        return text_of(content.get("content")) or json.dumps(content)
    return ""


def log(rec: dict[str, Any]) -> None:
    rec["t"] = time.time()
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


# ---------------------------------------------------------------- OpenAI chat (opencode)


def chat_view(body: dict[str, Any]) -> View:
    msgs = body.get("messages") or []
    tools = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
    results = [
        (m.get("tool_call_id", ""), text_of(m.get("content")))
        for m in msgs
        if m.get("role") == "tool"
    ]
    user = " ".join(text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    return View(scripted=bool(tools) and MARK in user, offered=tools, results=results)


def chat_answer(h: BaseHTTPRequestHandler, body: dict[str, Any], a: Action) -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    calls = (
        [
            {
                "index": 0,
                "id": a.call_id,
                "type": "function",
                "function": {"name": a.name, "arguments": json.dumps(a.input)},
            }
        ]
        if a.name
        else []
    )
    text = a.say if a.name else a.reply
    base = {"id": "c1", "created": int(time.time()), "model": "m"}
    if not body.get("stream"):
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        fr = "tool_calls" if calls else "stop"
        return send_json(
            h,
            {
                **base,
                "object": "chat.completion",
                "usage": usage,
                "choices": [{"index": 0, "message": msg, "finish_reason": fr}],
            },
        )
    chunks = []
    if text:
        chunks.append({"role": "assistant", "content": text})
    if calls:
        chunks.append({"role": "assistant", "tool_calls": calls})
    events = [
        {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": d, "finish_reason": None}],
        }
        for d in chunks
    ]
    events.append(
        {
            **base,
            "object": "chat.completion.chunk",
            "usage": usage,
            "choices": [
                {"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}
            ],
        }
    )
    payload = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    send_sse(h, payload + b"data: [DONE]\n\n")


# ---------------------------------------------------------------- Anthropic (Claude Code)

DEFERRED_HEAD = re.compile(r"deferred tools", re.I)
NAME_LINE = re.compile(r"^\s*[-*]?\s*`?([A-Za-z][A-Za-z0-9_.:-]*)`?\s*$")


def announcements(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Claude Code names deferred tools in text: a line about "deferred tools"
    and then one name a line (in the system prompt or a system message)."""
    texts = [text_of(body.get("system"))] if body.get("system") else []
    texts += [text_of(m.get("content")) for m in body.get("messages") or []]
    out = []
    for text in texts:
        lines, i = text.splitlines(), 0
        while i < len(lines):
            if DEFERRED_HEAD.search(lines[i]):
                head, names, j = lines[i].strip(), [], i + 1
                while j < len(lines) and not lines[j].strip():
                    j += 1
                while j < len(lines) and (mt := NAME_LINE.match(lines[j])):
                    names.append(mt.group(1))
                    j += 1
                if names:
                    out.append((head, names))
                i = max(j, i + 1)
            else:
                i += 1
    return out


def deferred_now(anns: list[tuple[str, list[str]]]) -> list[str]:
    now: list[str] = []
    for head, names in anns:
        if re.search(r"no longer|removed|unavailable|not available", head, re.I):
            now = [n for n in now if n not in names]
        else:
            now += [n for n in names if n not in now]
    return now


def anthropic_view(body: dict[str, Any]) -> View:
    msgs = body.get("messages") or []
    tools = body.get("tools") or []
    names = [t.get("name", "") for t in tools if t.get("name")]
    search = next((n for n in names if n.lower().replace("_", "") == "toolsearch"), None)
    user = " ".join(text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    results = []
    for m in msgs:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    results.append((str(b.get("tool_use_id", "")), text_of(b.get("content"))))
    # A flagged tool is in the array because it was loaded; an announced one is not yet.
    announced = [n for n in deferred_now(announcements(body)) if n != "DeferredToolPlaceholder"]
    direct = [n for n in names if n != "DeferredToolPlaceholder"]
    offered = list(dict.fromkeys(direct + announced))
    return View(
        scripted=bool(tools) and MARK in user,
        offered=offered,
        results=results,
        needs_load={n for n in announced if n not in names},
        client_search=search,
    )


def anthropic_answer(h: BaseHTTPRequestHandler, body: dict[str, Any], a: Action) -> None:
    model = body.get("model") or "claude-sonnet-4-5"
    mid = f"msg_fake{next(SEQ)}"
    usage = {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    content: list[dict[str, Any]] = []
    text = a.say if a.name else a.reply
    if text:
        content.append({"type": "text", "text": text})
    if a.name:
        content.append({"type": "tool_use", "id": a.call_id, "name": a.name, "input": a.input})
    stop = "tool_use" if a.name else "end_turn"
    if not body.get("stream"):
        return send_json(
            h,
            {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            },
        )
    out = []

    def ev(name: str, data: dict[str, Any]) -> None:
        out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    ev(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": dict(usage, output_tokens=0),
            },
        },
    )
    for i, block in enumerate(content):
        if block["type"] == "text":
            ev(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            ev(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "text_delta", "text": block["text"]},
                },
            )
        else:
            ev(
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": dict(block, input={})},
            )
            js = json.dumps(block["input"])
            for j in range(0, len(js), 40):
                ev(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": js[j : j + 40]},
                    },
                )
        ev("content_block_stop", {"type": "content_block_stop", "index": i})
    ev(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    ev("message_stop", {"type": "message_stop"})
    send_sse(h, b"".join(out))


# ---------------------------------------------------------------- OpenAI Responses (Codex)


def responses_tools(tools: Any) -> dict[str, tuple[str | None, str]]:
    """Full name -> (namespace, name): Codex puts MCP tools in a namespace tool
    and names them NAMESPACE__TOOL."""
    out: dict[str, tuple[str | None, str]] = {}
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace" or isinstance(t.get("tools"), list):
            ns = t.get("name", "")
            for sub in t.get("tools") or []:
                if isinstance(sub, dict):
                    name = sub.get("name", "")
                    out[ns + name if ns.endswith("_") else f"{ns}__{name}"] = (ns, name)
        else:
            name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type", "")
            out[name] = (None, name)
    return out


def responses_view(body: dict[str, Any]) -> tuple[View, dict[str, tuple[str | None, str]]]:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    tools = responses_tools(body.get("tools"))
    results = [
        (str(i.get("call_id", "")), text_of(i.get("output")))
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    user = " ".join(
        text_of(i.get("content"))
        for i in items
        if isinstance(i, dict) and i.get("type", "message") == "message" and i.get("role") == "user"
    )
    return View(scripted=bool(tools) and MARK in user, offered=list(tools), results=results), tools


def responses_answer(
    h: BaseHTTPRequestHandler,
    body: dict[str, Any],
    a: Action,
    tools: dict[str, tuple[str | None, str]],
    k: int,
) -> None:
    text = a.say if a.name else a.reply
    items: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    if text:
        msg = {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        idx = len(items)
        items.append(msg)
        events += [
            {
                "type": "response.output_item.added",
                "output_index": idx,
                "item": dict(msg, content=[], status="in_progress"),
            },
            {
                "type": "response.output_text.delta",
                "item_id": msg["id"],
                "output_index": idx,
                "content_index": 0,
                "delta": text,
            },
            {"type": "response.output_item.done", "output_index": idx, "item": msg},
        ]
    if a.name:
        ns, name = tools.get(a.name, (None, a.name))
        args = json.dumps(a.input)
        call = {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": a.call_id,
            "name": name,
            "arguments": args,
            "status": "completed",
        }
        if ns:
            call["namespace"] = ns
        idx = len(items)
        items.append(call)
        events += [
            {
                "type": "response.output_item.added",
                "output_index": idx,
                "item": dict(call, arguments="", status="in_progress"),
            },
            {
                "type": "response.function_call_arguments.delta",
                "item_id": call["id"],
                "output_index": idx,
                "delta": args,
            },
            {
                "type": "response.function_call_arguments.done",
                "item_id": call["id"],
                "output_index": idx,
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": idx, "item": call},
        ]
    usage = {
        "input_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 2,
    }
    resp = {
        "id": f"resp_{k}",
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "m"),
        "status": "in_progress",
        "output": [],
    }
    events.insert(0, {"type": "response.created", "response": resp})
    events.append(
        {
            "type": "response.completed",
            "response": dict(resp, status="completed", output=items, usage=usage),
        }
    )
    if body.get("stream") is False:
        return send_json(h, events[-1]["response"])
    send_sse(h, b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events))


# ---------------------------------------------------------------- HTTP


def send_json(h: BaseHTTPRequestHandler, obj: Any, code: int = 200) -> None:
    b = json.dumps(obj).encode()
    h.send_response(code)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(b)))
    h.end_headers()
    h.wfile.write(b)


def send_sse(h: BaseHTTPRequestHandler, payload: bytes) -> None:
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("cache-control", "no-cache")
    h.send_header("content-length", str(len(payload)))
    h.end_headers()
    h.wfile.write(payload)
    h.wfile.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        log({"method": "GET", "path": self.path})
        if path.endswith("/models"):
            return send_json(
                self,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": "m",
                            "object": "model",
                            "type": "model",
                            "display_name": "Fake",
                            "created_at": "2025-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "models": [],
                },
            )
        send_json(self, {"error": {"message": "not here", "type": "not_found_error"}}, 404)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0].rstrip("/")
        n = next(REQ)
        with open(os.path.join(BODIES, f"{n:03d}.json"), "w") as f:
            json.dump({"path": self.path, "body": body}, f, indent=1)
        rec: dict[str, Any] = {"n": n, "method": "POST", "path": self.path}
        if path.endswith("/count_tokens"):
            log(rec)
            return send_json(self, {"input_tokens": 10})
        tools: dict[str, tuple[str | None, str]] = {}
        if path.endswith("/chat/completions"):
            view, prefix = chat_view(body), "call_"
        elif path.endswith("/messages"):
            view, prefix = anthropic_view(body), "toolu_"
        elif path.endswith("/responses"):
            (view, tools), prefix = responses_view(body), "call_"
        else:
            log(rec)
            return send_json(self, {})
        action = decide(SCRIPT, view, prefix)
        if view.scripted and THINK:
            time.sleep(THINK)  # a model takes time; meanwhile a client acts on notifications
        log(
            dict(
                rec,
                scripted=view.scripted,
                step=action.step,
                how=action.how,
                call=action.name,
                call_input=action.input,
                reply=action.reply,
                offered=view.offered,
            )
        )
        if path.endswith("/chat/completions"):
            chat_answer(self, body, action)
        elif path.endswith("/messages"):
            anthropic_answer(self, body, action)
        else:
            responses_answer(self, body, action, tools, n)


srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
with open(LOG + ".port", "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
