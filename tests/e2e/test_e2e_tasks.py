"""Long calls as tasks (the MCP tasks extension) against `presets serve --transport http`.

A 2026-07-28 client that declares ``io.modelcontextprotocol/tasks`` gets a
task for a call of a task-capable tool: these tests drive it with raw HTTP
JSON, as the wire is what a client sees. The shell's command really stops
when its task is cancelled (its process is gone), the result is read later
from a client that made the task and went away, and what a client must not be
able to do (read or cancel another caller's task, probe ids) is refused as
an unknown id would be. The suite's own tasks-* scenarios are in
test_e2e_conformance.py.
"""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from host_processes import processes_with

from agent_presets.server.events import read_events

from .conftest import HttpServer, serve_command, server_env
from .rawhttp import RawSession
from .test_e2e_rounds import raw_request

TASK_PLUGINS = Path(__file__).resolve().parents[1] / "conformance" / "task_plugins"
VERSION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
WITH_TASKS: dict[str, Any] = {"extensions": {TASKS: {}}}
ASKABLE: dict[str, Any] = {"elicitation": {}, **WITH_TASKS}
_ids = itertools.count(1)


def presets(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = serve_command()
    return subprocess.run(
        [*command[:-1], *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )


def task_server(state: Path, *extra: str) -> HttpServer:
    return HttpServer(state, "--plugins-dir", str(TASK_PLUGINS), *extra)


def rpc(
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    capabilities: dict[str, Any] | None = None,
    token: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """One raw 2026-07-28 request: its JSON-RPC answer (the last SSE event, or the JSON)."""
    named = name if name is not None else params.get("name") or params.get("taskId")
    asks = WITH_TASKS if capabilities is None else capabilities
    return raw_request(url, method, named, params, asks, token=token, request_id=next(_ids))


def result(answer: dict[str, Any]) -> dict[str, Any]:
    assert "result" in answer, answer
    return dict(answer["result"])


def error(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    return dict(answer["error"])


def call(url: str, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return result(rpc(url, "tools/call", {"name": tool, "arguments": arguments}, **kw))


def get(url: str, task_id: str, **kw: Any) -> dict[str, Any]:
    return rpc(url, "tasks/get", {"taskId": task_id}, **kw)


def until(
    url: str, task_id: str, *statuses: str, timeout: float = 30.0, token: str | None = None
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = result(get(url, task_id, token=token))
        if task["status"] in statuses or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


@pytest.fixture
def shell_server(tmp_path: Path) -> Any:
    server = task_server(tmp_path / "state", "--root", str(tmp_path / "root"))
    try:
        done = presets(tmp_path / "state", "on", "general-shell-tools", "--yes")
        assert done.returncode == 0, done.stderr
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(tmp_path: Path) -> Any:
    server = task_server(tmp_path / "state")
    try:
        yield server
    finally:
        server.stop()


def test_a_cancelled_shell_task_kills_its_command(shell_server: HttpServer, tmp_path: Path) -> None:
    seconds = f"297.{uuid.uuid4().int % 10**6:06d}"  # a sleep no other process runs
    created = call(
        shell_server.url, "space_app_run_bash", {"command": f"sleep {seconds}; echo never"}
    )
    assert created["resultType"] == "task", created
    assert wait_for(lambda: processes_with(f"sleep {seconds}"), 10), "the command never started"
    assert result(get(shell_server.url, created["taskId"]))["status"] == "working"

    ack = result(rpc(shell_server.url, "tasks/cancel", {"taskId": created["taskId"]}))

    assert ack.get("resultType") == "complete" and "status" not in ack
    assert wait_for(lambda: not processes_with(f"sleep {seconds}"), 5), (
        "the command outlived the cancelled task: " + str(processes_with(f"sleep {seconds}"))
    )
    assert result(get(shell_server.url, created["taskId"]))["status"] == "cancelled"
    # The call went through the pipeline: the event log has it, cancelled.
    assert wait_for(
        lambda: any(
            e.get("tool") == "space_app_run_bash" and e.get("outcome") == "cancelled"
            for e in read_events(tmp_path / "state" / "events.jsonl")
        ),
        5,
    )


def test_a_shell_task_reports_progress_and_its_result_is_read_later(
    shell_server: HttpServer,
) -> None:
    created = call(shell_server.url, "space_app_run_bash", {"command": "sleep 2.3; echo hello"})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)

    messages = set()
    deadline = time.monotonic() + 30
    while True:
        task = result(get(shell_server.url, created["taskId"]))
        messages.add(task.get("statusMessage"))
        if task["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(0.2)

    assert task["status"] == "completed", task
    assert task["result"]["structuredContent"]["stdout"] == "hello\n"
    assert task["result"]["isError"] is False
    assert any(m and m.startswith("running for") for m in messages), messages


def test_a_task_runs_on_after_the_client_that_made_it_is_gone(server: HttpServer) -> None:
    # rpc() closes its connection after each answer: the call outlives its request.
    created = call(server.url, "space_slow_compute", {"seconds": 1.5, "label": "away"})
    assert created["resultType"] == "task"
    time.sleep(2.5)
    task = result(get(server.url, created["taskId"]))
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "away: done after 1.5s"


def test_a_question_parks_the_task_until_tasks_update_answers_it(server: HttpServer) -> None:
    created = call(server.url, "space_confirm_delete", {"filename": "a.txt"}, capabilities=ASKABLE)
    parked = until(server.url, created["taskId"], "input_required")
    assert parked["status"] == "input_required"
    (key,) = parked["inputRequests"]
    assert parked["inputRequests"][key]["method"] == "elicitation/create"

    answer = {key: {"action": "accept", "content": {"confirm": True}}}
    ack = result(
        rpc(server.url, "tasks/update", {"taskId": created["taskId"], "inputResponses": answer})
    )

    assert ack.get("resultType") == "complete" and "status" not in ack
    done = until(server.url, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Deleted a.txt"


RISKY_PLUGIN = """
from agent_presets import ToolAdapter, hookimpl, object_schema


def stamp(app, args):
    return "stamped " + args["label"]


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "risky.stamp",
            handler=stamp,
            description="Stamp a label (writes).",
            input_schema=object_schema({"label": {"type": "string"}}, required=["label"]),
            name="stamp",
            task_support="optional",
        )
    ]
"""
RISKY_PRESETS = """
presets:
  - name: risky-stamp-tools
    default_state: "off"
    risk: filesystem-write
    contexts: [{surface: any}]
    tool_ids: [risky.stamp]
"""


def test_a_confirmation_answered_through_tasks_update_runs_the_call(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "risky.py").write_text(RISKY_PLUGIN)
    (plugins / "risky.yaml").write_text(RISKY_PRESETS)
    state = tmp_path / "state"
    server = HttpServer(
        state, "--plugins-dir", str(plugins), "--confirm", "risky", "--confirm-via", "client"
    )
    try:
        done = presets(state, "on", "risky-stamp-tools", "--yes")
        assert done.returncode == 0, done.stderr
        created = call(server.url, "space_stamp", {"label": "box"}, capabilities=ASKABLE)
        assert created["resultType"] == "task", created
        parked = until(server.url, created["taskId"], "input_required")
        assert parked["status"] == "input_required", parked
        (key,) = parked["inputRequests"]
        assert "Allow the agent to run space_stamp" in str(parked["inputRequests"][key])
        answer = {key: {"action": "accept"}}
        update = {"taskId": created["taskId"], "inputResponses": answer}
        result(rpc(server.url, "tasks/update", update))
        finished = until(server.url, created["taskId"], "completed", "failed", timeout=10)
        assert finished["status"] == "completed", finished
        assert finished["result"]["content"][0]["text"] == "stamped box"
        waiting = presets(state, "requests", "--json")
        assert waiting.returncode == 0 and waiting.stdout.strip() == "[]", waiting.stdout
    finally:
        server.stop()


def test_without_the_extension_a_task_capable_tool_answers_directly(server: HttpServer) -> None:
    answer = call(
        server.url, "space_slow_compute", {"seconds": 0.1, "label": "sync"}, capabilities={}
    )
    assert answer["resultType"] == "complete" and "taskId" not in answer
    assert answer["content"][0]["text"] == "sync: done after 0.1s"


# -- what a client must not be able to do ----------------------------------------------


def test_an_unknown_task_id_is_invalid_params(server: HttpServer) -> None:
    for method, extra in (
        ("tasks/get", {}),
        ("tasks/cancel", {}),
        ("tasks/update", {"inputResponses": {}}),
    ):
        refused = error(rpc(server.url, method, {"taskId": "no-such-task", **extra}))
        assert refused["code"] == -32602, (method, refused)
        assert "no task 'no-such-task'" in refused["message"]


def test_another_callers_task_answers_as_an_unknown_one(tmp_path: Path) -> None:
    state = tmp_path / "state"
    tokens = {}
    for name in ("alice", "bob"):
        made = presets(state, "tokens", "create", name)
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.strip()
    server = task_server(state, "--auth", "tokens")
    try:
        alice, bob = tokens["alice"], tokens["bob"]
        created = call(server.url, "space_slow_compute", {"seconds": 3, "label": "a"}, token=alice)
        task_id = created["taskId"]
        unknown = error(rpc(server.url, "tasks/get", {"taskId": "x" * len(task_id)}, token=bob))
        for method, extra in (
            ("tasks/get", {}),
            ("tasks/cancel", {}),
            ("tasks/update", {"inputResponses": {"k": {"action": "accept"}}}),
        ):
            refused = error(rpc(server.url, method, {"taskId": task_id, **extra}, token=bob))
            assert refused["code"] == unknown["code"] == -32602
            # The same words as for an id nobody has, but the id itself: nothing to probe.
            assert refused["message"].replace(task_id, "ID") == unknown["message"].replace(
                "x" * len(task_id), "ID"
            )
        # Bob's cancel did nothing to it: Alice's task runs on to its result.
        task = until(server.url, task_id, "completed", "cancelled", token=alice)
        assert task["status"] == "completed"
    finally:
        server.stop()


def test_cancel_of_a_finished_task_acks_and_changes_nothing(server: HttpServer) -> None:
    created = call(server.url, "space_slow_compute", {"seconds": 0.2, "label": "quick"})
    done = until(server.url, created["taskId"], "completed")
    assert done["status"] == "completed"

    ack = result(rpc(server.url, "tasks/cancel", {"taskId": created["taskId"]}))

    assert ack.get("resultType") == "complete" and "taskId" not in ack
    after = result(get(server.url, created["taskId"]))
    assert after["status"] == "completed"
    assert after["result"] == done["result"]


def test_tasks_methods_need_the_extension_declared(server: HttpServer) -> None:
    created = call(server.url, "space_slow_compute", {"seconds": 0.2, "label": "mine"})
    refused = error(get(server.url, created["taskId"], capabilities={}))
    assert refused["code"] == -32021
    assert refused["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}


def test_a_tool_that_requires_a_task_is_refused_without_the_extension(server: HttpServer) -> None:
    refused = error(
        rpc(
            server.url,
            "tools/call",
            {"name": "space_failing_job", "arguments": {}},
            capabilities={},
        )
    )
    assert refused["code"] == -32021
    assert "runs only as a task" in refused["message"]


def test_an_mcp_name_header_that_is_not_the_task_id_is_refused(server: HttpServer) -> None:
    created = call(server.url, "space_slow_compute", {"seconds": 0.2, "label": "h"})
    refused = error(get(server.url, created["taskId"], name="another-task"))
    assert refused["code"] == -32020


def test_a_2025_11_25_session_has_no_tasks_and_calls_answer_directly(server: HttpServer) -> None:
    session = RawSession(server.url)
    session.initialize()
    answer = session.request("tasks/get", {"taskId": "anything"})[-1].message
    assert answer["error"]["code"] == -32601
    called = session.request(
        "tools/call", {"name": "space_slow_compute", "arguments": {"seconds": 0.1, "label": "old"}}
    )[-1].message
    assert called["result"]["content"][0]["text"] == "old: done after 0.1s"


def test_a_2025_11_25_cancel_kills_the_shell_command(shell_server: HttpServer) -> None:
    # No tasks in this era: the client cancels the call itself (notifications/cancelled).
    session = RawSession(shell_server.url)
    session.initialize()
    seconds = f"296.{uuid.uuid4().int % 10**6:06d}"
    body = {
        "jsonrpc": "2.0",
        "id": 99,
        "method": "tools/call",
        "params": {"name": "space_app_run_bash", "arguments": {"command": f"sleep {seconds}"}},
    }
    threading.Thread(target=lambda: session.post(body, until=99), daemon=True).start()
    assert wait_for(lambda: processes_with(f"sleep {seconds}"), 10), "the command never started"

    session.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}
    )

    assert wait_for(lambda: not processes_with(f"sleep {seconds}"), 5), (
        "the command outlived its cancelled call"
    )


def test_a_replica_serves_no_tasks_and_says_why(tmp_path: Path) -> None:
    """docs/replicas.md: behind a balancer a task would live in one replica's memory only."""
    server = task_server(tmp_path / "state", "--replica", "r1")
    try:
        discovered = result(rpc(server.url, "server/discover", {}, name=None))
        assert TASKS not in (discovered.get("capabilities", {}).get("extensions") or {})
        # A task-capable call answers directly, as for a client without the extension.
        answer = call(server.url, "space_slow_compute", {"seconds": 0.1, "label": "here"})
        assert answer["resultType"] == "complete" and "taskId" not in answer
        assert answer["content"][0]["text"] == "here: done after 0.1s"
        required = error(
            rpc(server.url, "tools/call", {"name": "space_failing_job", "arguments": {}})
        )
        refused = error(get(server.url, "some-task"))
        for refusal in (required, refused):
            assert refusal["code"] == -32600, refusal
            assert "replica 'r1'" in refusal["message"] and "serve no tasks" in refusal["message"]
    finally:
        server.stop()
