"""A transparent logging relay for a stdio MCP server (a copy of claudecode-drive's
mcp_tap.py, from the agent-presets client drivers; tool results are kept to 2,000
characters, where the bench reads the context a switch left).

usage: mcp_tap.py LOG.jsonl CMD [ARGS...]

Runs CMD as the MCP server and relays newline-delimited JSON-RPC, unchanged,
between this process's stdin/stdout and CMD's. Each message is appended to
LOG.jsonl as one JSON line: "dir" ("c>s" client to server, "s>c" server to
client), "id", "method" (a response has "response_to": its request's method),
"msg" (the message's first 4000 bytes), and a summary: for initialize /
server/discover the protocol version, client or server info and capabilities;
for a tools/list result the tool names; for tools/call the tool, and whether
the result is an error. CMD's stderr goes to LOG.jsonl.stderr; this relay's PID
and CMD's go to LOG.jsonl.pids.

SIGTERM and SIGINT are passed on to CMD; when the client closes stdin, CMD's
stdin is closed. CMD gets 5 s to exit after a signal (or after it closes its
stdout), then is killed. The relay exits when CMD does.
"""
# ruff: noqa: SIM105, SIM115

import json
import os
import signal
import subprocess
import sys
import threading
import time

LOG, CMD = sys.argv[1], sys.argv[2:]
FULL = 4000
child = subprocess.Popen(
    CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(LOG + ".stderr", "ab")
)
with open(LOG + ".pids", "a") as f:  # for the harness, to check that nothing is left running
    f.write(f"{os.getpid()} {child.pid}\n")
lock = threading.Lock()
pending = {}  # (direction of the request, id) -> method
done = threading.Event()


def note(direction, line):
    rec = {"t": time.time(), "dir": direction}
    try:
        msg = json.loads(line)
    except ValueError:
        rec["raw"] = line[:300].decode("utf-8", "replace")
        msg = None
    if isinstance(msg, dict):
        # the message itself, cut short (tools/list results are summarised below instead)
        rec["msg"] = line[:FULL].decode("utf-8", "replace")
        mid, method = msg.get("id"), msg.get("method")
        rec["id"] = mid
        if method:
            rec["method"] = method
            if mid is not None:
                pending[(direction, mid)] = method
            params = msg.get("params") or {}
            if method == "initialize":
                rec["protocolVersion"] = params.get("protocolVersion")
                rec["clientInfo"] = params.get("clientInfo")
                rec["capabilities"] = params.get("capabilities")
            elif method == "tools/call":
                rec["tool"] = params.get("name")
                rec["arguments"] = params.get("arguments")
        else:
            other = "s>c" if direction == "c>s" else "c>s"
            method = pending.pop((other, mid), None)
            rec["response_to"] = method
            result = msg.get("result")
            if "error" in msg:
                rec["error"] = msg["error"]
            elif isinstance(result, dict):
                if method == "initialize":
                    rec["protocolVersion"] = result.get("protocolVersion")
                    rec["serverInfo"] = result.get("serverInfo")
                    rec["capabilities"] = result.get("capabilities")
                elif method == "tools/list":
                    rec["tools"] = [t.get("name") for t in result.get("tools", [])]
                    rec["msg"] = rec["msg"][:300]
                    rec["nextCursor"] = result.get("nextCursor")
                elif method == "tools/call":
                    rec["isError"] = bool(result.get("isError"))
                    rec["text"] = " ".join(
                        c.get("text", "") for c in result.get("content", []) if isinstance(c, dict)
                    )[:2000]
    with lock, open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


def pump(src, dst, direction, on_eof):
    try:
        for line in iter(src.readline, b""):
            if line.strip():
                try:
                    note(direction, line)
                except Exception as e:  # the log must never break the relay
                    with lock, open(LOG, "a") as f:
                        f.write(
                            json.dumps({"t": time.time(), "dir": direction, "log_error": repr(e)})
                            + "\n"
                        )
            dst.write(line)
            dst.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass
    on_eof()


def close_child_stdin():
    try:
        child.stdin.close()
    except OSError:
        pass


signalled = []  # when a signal came: it is passed on to CMD, which gets 5 s to exit


def forward(sig, _frame):
    if child.poll() is None:
        try:
            child.send_signal(sig)
        except OSError:
            pass
    if not signalled:
        signalled.append(time.time())


signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGINT, forward)
threading.Thread(
    target=pump, args=(sys.stdin.buffer, child.stdin, "c>s", close_child_stdin), daemon=True
).start()
threading.Thread(
    target=pump, args=(child.stdout, sys.stdout.buffer, "s>c", done.set), daemon=True
).start()
while child.poll() is None:
    if done.wait(0.05) and not signalled:
        signalled.append(time.time())  # CMD closed its stdout: give it 5 s to exit
    if signalled and time.time() - signalled[0] > 5:
        child.kill()
        break
child.wait()
with lock, open(LOG, "a") as f:
    f.write(json.dumps({"t": time.time(), "dir": "end", "server_rc": child.returncode}) + "\n")
try:
    sys.stdout.flush()
except OSError:
    pass
os._exit(
    0
)  # not sys.exit: the stdin pump may still hold stdin's lock, which blocks a normal shutdown
