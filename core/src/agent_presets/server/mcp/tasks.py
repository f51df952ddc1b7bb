"""Long calls as tasks: the MCP tasks extension (SEP-2663) on 2026-07-28 connections.

A tool whose adapter says ``task_support`` (the shell's ``run_bash``, terrain
generation, a unit reload) may run as a task for a client that declares the
``io.modelcontextprotocol/tasks`` extension, for its session or in one
request's ``_meta``. The server decides (the client sends no hint): the
``tools/call`` answers at once with a ``CreateTaskResult`` (``resultType:
"task"``, the task's id and status), the call runs on, and the client polls
``tasks/get``, which carries the result once the call is over; ``tasks/cancel``
stops it, and ``tasks/update`` answers what the call asked.

The call itself is the ordinary one: the task runs it through the server's
pipeline (``Serving.run``), so gates, budgets, the confirmation and the event
log apply to it as to any call. A round that asks the client something (a
handler's ``elicit``, a ``--confirm-via client`` confirmation) parks the task
in ``input_required`` with its ``inputRequests``; once ``tasks/update`` has
answered every one, the call runs again with the answers, as a multi-round
call would (``rounds.py``): opened again after the wait, its tool resolved
again, as the next request of a multi-round call is. A tool that *requires*
a task asks its first round's questions before the task exists, as the
rounds of the call itself (``ASK_FIRST``): the task begins with the answers
in hand.

What the SDK gives: the wire types (``mcp_types``), the extension's slot in
the server's capabilities (``Server.extensions``) and the dispatch of methods
it does not know (``add_request_handler``); it keeps no tasks itself (mcp
2.3.0), so this module holds them.

Behind replicas (``serve --replica NAME``) there are no tasks: a task lives
in one replica's memory, and a balancer sends a ``tasks/get`` without a
session id to any replica, which would answer ``-32602`` every other time. A
replica does not advertise the extension, runs a task-capable call directly
(as for a client that did not declare it), refuses a tool that *requires* a
task with ``-32600`` saying why, and answers ``tasks/*`` the same way
(``docs/replicas.md``).

Who may see a task: the caller that made it (its token, or ``local``), and
nobody else; another caller's id answers exactly as an unknown one
(``-32602``), so ids cannot be probed. Tasks live in the server's memory: one
survives its client disconnecting (the call runs on, and a client that comes
back with the id reads the result) but not a restart of the server
(``docs/tasks.md``).

The 2025-11-25 revision had tasks of its own (``task`` params, ``tasks/list``,
``tasks/result``), which the SDK deliberately leaves out; on such connections
the tools answer their calls directly, and ``notifications/cancelled`` stops
them (the call context's ``cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from agent_presets.server.mcp.auth import principal_of
from agent_presets.server.mcp.rounds import Rounds
from agent_presets.server.stage import PendingCall

if TYPE_CHECKING:
    from agent_presets.server.mcp.serving import Serving


log = logging.getLogger("agent_presets.server")

TASKS: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier, under ``capabilities.extensions``."""

TTL_MS: Final = 3_600_000
"""How long a task is kept from its creation (an hour): its result can be read until then."""

POLL_MS: Final = 500
"""How often a client should poll ``tasks/get``."""

ASK_FIRST: Final = 0.25
"""Seconds a call of a tool that requires a task may take to ask its first questions
before the task is made; questions asked later park the task instead."""

MAX_RUNNING: Final = 32
"""Unfinished tasks one caller may have at once; one more call runs without a task."""

MAX_KEPT: Final = 1024
"""Tasks kept in all; beyond it the oldest finished ones are forgotten first."""

NOTICE_TIMEOUT: Final = 1.0
"""Seconds a task's notice (progress, a log line) may take to reach its client."""

Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task's id."""

    task_id: str = Field(min_length=1, max_length=256)


class UpdateParams(TaskParams):
    """``tasks/update``: answers to the task's input requests, by key."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def declared(ctx: Any) -> bool:
    """Whether the request's client declared the tasks extension (session or ``_meta``)."""
    session = getattr(ctx, "session", None)
    caps = getattr(session, "client_capabilities", None)
    extensions = getattr(caps, "extensions", None)
    return isinstance(extensions, Mapping) and TASKS in extensions


def modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _needs_tasks(message: str) -> MCPError:
    """The ``-32021`` of a request that needs the tasks extension its client did not declare."""
    return MCPError(
        code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=message,
        data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


@dataclass(eq=False)
class Task:
    """One task: its call, where it stands, and what the call asked or answered."""

    id: str
    owner: str
    tool: str
    created: float = field(default_factory=time.time)
    created_at: str = field(default_factory=_stamp)
    updated_at: str = ""
    status: Status = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    confirmed: str | None = None
    job: asyncio.Task[None] | None = None
    round_over: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a run of the call ends (with a result or with questions)."""
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    first: dict[str, Any] | None = None
    """What the first run of the call ended with, while no client has seen the task."""

    def __post_init__(self) -> None:
        self.updated_at = self.created_at

    @property
    def over(self) -> bool:
        return self.status in TERMINAL

    def move(self, status: Status, message: str | None = None) -> None:
        if self.over:  # a cancelled task stays cancelled, whatever its call did after
            return
        self.status = status
        self.message = message
        self.updated_at = _stamp()

    def wire(self) -> dict[str, Any]:
        """The task's fields, as ``CreateTaskResult`` and ``tasks/get`` carry them."""
        value: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_MS,
        }
        if self.message is not None:
            value["statusMessage"] = self.message
        return value

    def detailed(self) -> dict[str, Any]:
        """``tasks/get``: the fields, with the result, the error or the open questions."""
        value = self.wire()
        if self.status == "completed" and self.result is not None:
            value["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            value["error"] = self.error
        elif self.status == "input_required":
            value["inputRequests"] = dict(self.asked)
        return value


class _TaskSession:
    """The call's session, seen from its task: progress is the task's status message too.

    A task outlives the request that made it, and with it the stream its
    notices rode: a notice that cannot be delivered any more is dropped
    (after ``NOTICE_TIMEOUT`` at most), never an error for the handler.
    """

    def __init__(self, session: Any, task: Task) -> None:
        self._session = session
        self._task = task

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        task = self._task
        text = message or (f"{progress:g} of {total:g}" if total else f"{progress:g}")
        if task.status == "working":
            task.message = text
            task.updated_at = _stamp()
        await self._deliver(self._session.report_progress(progress, total, message))

    async def send_notification(self, *args: Any, **kwargs: Any) -> None:
        await self._deliver(self._session.send_notification(*args, **kwargs))

    @staticmethod
    async def _deliver(notice: Any) -> None:
        with anyio.move_on_after(NOTICE_TIMEOUT), contextlib.suppress(Exception):
            await notice


class Tasks:
    """The server's tasks, and its ``tasks/*`` handlers (see the module docstring)."""

    def __init__(self, serving: Serving) -> None:
        self.serving = serving
        self._tasks: dict[str, Task] = {}
        self.extensions: dict[str, Any] = {}
        """The server's extensions (``register``), where this one is advertised."""
        self.replica: str | None = None
        """This server's replica name (``behind``): tasks are not served then."""

    def register(self, add: Callable[..., None], extensions: dict[str, Any]) -> None:
        """Add the ``tasks/*`` handlers with ``add``, and the extension to ``extensions``."""
        # Advertised in server/discover (2026-07-28 only: the SDK adds extensions there).
        self.extensions = extensions
        extensions[TASKS] = {}
        add("tasks/get", TaskParams, self._get)
        add("tasks/update", UpdateParams, self._update)
        add("tasks/cancel", TaskParams, self._cancel)

    def behind(self, replica: str) -> None:
        """This server is replica ``replica`` behind a balancer: no tasks (module docstring)."""
        self.replica = replica
        self.extensions.pop(TASKS, None)

    def _not_here(self, what: str) -> MCPError:
        return MCPError(
            code=types.INVALID_REQUEST,
            message=(
                f"{what}: this server is replica {self.replica!r} behind a load balancer, "
                "and a task would live in one replica's memory while the balancer sends "
                "tasks/get to any of them, so replicas serve no tasks. Call the tool without "
                f"the {TASKS} extension, or use a server without --replica"
            ),
        )

    def close(self) -> None:
        for task in self._tasks.values():
            if task.job is not None and not task.job.done():
                task.job.cancel()

    def __len__(self) -> int:
        return len(self._tasks)

    # -- tools/call ---------------------------------------------------------------

    def takes(self, call: PendingCall) -> bool:
        """Whether ``call`` is this module's: a tool that may run as a task, on a modern request."""
        tool = call.tool
        return tool is not None and tool.task_support is not None and modern(call.request)

    async def call(self, call: PendingCall) -> dict[str, Any]:
        """Answer a ``tools/call`` of a task-capable tool: a task, or the call's own result."""
        tool = call.tool
        assert tool is not None and tool.task_support is not None
        run = self.serving.run
        ctx = call.request
        if self.replica is not None:
            if tool.task_support == "required":
                raise self._not_here(f"{call.name} runs only as a task")
            return await run(call)
        if not declared(ctx):
            if tool.task_support == "required":
                raise _needs_tasks(
                    f"{call.name} runs only as a task: declare the {TASKS} extension "
                    "in the request's clientCapabilities to call it"
                )
            return await run(call)
        owner = principal_of(ctx)
        if self._running(owner) >= MAX_RUNNING:
            return await run(call)  # no task: the call answers when done
        task = self._new(owner, call.name)
        # Its notices reach the client through the task's session, which outlives the request.
        call = dataclasses.replace(
            call, request=dataclasses.replace(ctx, session=_TaskSession(ctx.session, task))
        )
        task.job = asyncio.get_running_loop().create_task(self._drive(task, call))
        if tool.task_support == "required":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(task.round_over.wait(), ASK_FIRST)
            first = task.first
            if first is not None and first.get("resultType") == "input_required":
                # Asked before its work began: a round of the call, and no task yet.
                self._forget(task)
                task.job.cancel()  # it waits for answers that come with the next call
                return first
        task.first = None
        return {"resultType": "task", **task.wire()}

    async def _drive(self, task: Task, call: PendingCall) -> None:
        """Run the call, round after round, until it ends; the task follows it."""
        try:
            while True:
                result = await self.serving.run(call)
                if result.get("resultType") != "input_required":
                    task.result = result
                    task.move("completed")
                    return
                task.asked = dict(result.get("inputRequests") or {})
                # The round's state, as a client would carry it back: what was asked
                # (a confirmation takes only the answer to its own question), the
                # answers so far, and the approval that let the call run.
                rounds = Rounds.of({"requestState": result.get("requestState")})
                task.confirmed = rounds.confirmed
                if task.first is None and not task.round_over.is_set():
                    task.first = result
                task.move("input_required", "waiting for the client's answers (tasks/update)")
                task.round_over.set()
                await task.answered.wait()
                task.answered = asyncio.Event()
                task.move("working")
                call = self.serving.open(
                    call.name,
                    call.arguments,
                    call.token,
                    call.request,
                    rounds=Rounds(
                        answers={**rounds.answers, **task.answers},
                        asked=rounds.asked,
                        confirmed=task.confirmed,
                    ),
                )
        except asyncio.CancelledError:
            task.move("cancelled", "cancelled by the client")
        except MCPError as exc:  # the call was answered with a protocol error
            task.error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            task.move("failed", exc.error.message)
        except Exception:  # the pipeline records a handler's failure; this is anything else
            log.exception("task %s of %s failed", task.id, task.tool)
            task.error = {"code": types.INTERNAL_ERROR, "message": "Internal error"}
            task.move("failed", "the server failed to run the call (its log has the details)")
        finally:
            task.round_over.set()

    # -- the store ----------------------------------------------------------------

    def _new(self, owner: str, tool: str) -> Task:
        self._sweep()
        task = Task(secrets.token_urlsafe(18), owner, tool)
        self._tasks[task.id] = task
        return task

    def _forget(self, task: Task) -> None:
        self._tasks.pop(task.id, None)

    def _running(self, owner: str) -> int:
        return sum(1 for t in self._tasks.values() if t.owner == owner and not t.over)

    def _sweep(self) -> None:
        """Forget finished tasks past their time, and the oldest finished ones beyond the cap."""
        now = time.time()
        expired = [k for k, t in self._tasks.items() if t.over and now - t.created > TTL_MS / 1000]
        for key in expired:
            del self._tasks[key]
        if len(self._tasks) >= MAX_KEPT:
            finished = sorted((t for t in self._tasks.values() if t.over), key=lambda t: t.created)
            for task in finished[: len(self._tasks) - MAX_KEPT + 1]:
                del self._tasks[task.id]

    def _find(self, ctx: ServerRequestContext[Any], params: TaskParams, method: str) -> Task:
        """The caller's task of ``params``; every refusal of a ``tasks/*`` request is here."""
        if not modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found", data=method)
        if self.replica is not None:
            raise self._not_here(f"{method} has no task to find")
        if not declared(ctx):
            raise _needs_tasks(
                f"{method} is part of the {TASKS} extension, which this request's "
                "clientCapabilities do not declare; declare it to use tasks"
            )
        headers = getattr(ctx.request, "headers", None)
        named = headers.get("mcp-name") if headers is not None else None
        if named is not None and named.strip() != params.task_id:
            raise MCPError(
                code=types.HEADER_MISMATCH,
                message=(
                    f"the Mcp-Name header ({named.strip()!r}) is not the request's "
                    "params.taskId; send the task's id in both"
                ),
            )
        task = self._tasks.get(params.task_id)
        if task is None or task.owner != principal_of(ctx):
            # Another caller's task answers as an unknown one: ids cannot be probed.
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=(
                    f"Invalid task: no task {params.task_id!r} of this caller (it may have "
                    f"expired: tasks are kept {TTL_MS // 60000} minutes, and not across a "
                    "restart of the server); call the tool again"
                ),
            )
        return task

    # -- tasks/* ------------------------------------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        self._sweep()
        return self._find(ctx, params, "tasks/get").detailed()

    async def _update(self, ctx: ServerRequestContext[Any], params: UpdateParams) -> dict[str, Any]:
        task = self._find(ctx, params, "tasks/update")
        # What it did not ask (or asked and has its answer to) is ignored, as the spec says.
        for key, answer in params.input_responses.items():
            if key in task.asked and isinstance(answer, Mapping):
                task.answers[key] = dict(answer)
                del task.asked[key]
        if task.status == "input_required" and not task.asked:
            task.answered.set()
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params, "tasks/cancel")
        if not task.over:
            task.move("cancelled", "cancelled by the client")
            if task.job is not None:
                # Cancels the call: the Run stage tells the handler (its context's
                # `cancelled`), and the shell kills its command's processes.
                task.job.cancel()
        return {}


__all__ = ["TASKS", "Task", "Tasks", "declared"]
