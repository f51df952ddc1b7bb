"""The conformance suite's task fixtures (the tasks-* scenarios), as an ordinary plugin.

The scenarios name their tools without a namespace (``greet``, ``slow_compute``
...), so this folder is served under ``--namespace ""``. A tool says it may run
as a task with ``task_support``; the server decides the rest. Work is done in
small steps that check ``context.cancelled``, as a real long handler would, so
a cancelled task stops at once.
"""

from __future__ import annotations

import time
from typing import Any

from agent_presets import CallContext, ToolAdapter, ToolCall, ToolCallError, hookimpl, object_schema

STEP = 0.05


def _context(call: ToolCall) -> CallContext:
    if call.context is None:
        raise ToolCallError(f"{call.name} needs an MCP client; call it over MCP")
    return call.context


def _work(ctx: CallContext, seconds: float) -> bool:
    """Work for ``seconds`` in steps, reporting progress; False when cancelled first."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if ctx.cancelled:
            return False
        time.sleep(min(STEP, left))
        ctx.progress(round(seconds - max(left - STEP, 0), 2), seconds)
    return not ctx.cancelled


def greet(_app: Any, args: dict[str, Any]) -> str:
    return f"Hello, {args['name']}!"


def slow_compute(_app: Any, args: dict[str, Any], call: ToolCall) -> str:
    seconds = float(args.get("seconds", 1))
    if not _work(_context(call), seconds):
        return f"{args.get('label', 'compute')}: cancelled"
    return f"{args.get('label', 'compute')}: done after {seconds:g}s"


def failing_job(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    _work(_context(call), 1.0)
    raise ToolCallError(f"{call.name}: this job always fails, to test tool errors in tasks")


def protocol_error_job(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    # The scenarios' clients declare no roots: asking for them is a protocol error (-32021).
    roots = _context(call).list_roots(key="roots")
    return f"{len(roots)} roots"


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def confirm_delete(_app: Any, args: dict[str, Any], call: ToolCall) -> str:
    answer = _context(call).elicit(f"Delete {args['filename']}?", CONFIRM)
    if answer.accepted and (answer.content or {}).get("confirm"):
        return f"Deleted {args['filename']}"
    return f"Kept {args['filename']}"


def multi_input(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call)
    with ctx.together():  # both questions in one round: two keys pending at once
        first = ctx.elicit("First value?", NAME, key="first")
        second = ctx.elicit("Second value?", NAME, key="second")
    return f"Got {(first.content or {}).get('name')} and {(second.content or {}).get('name')}"


def tool_with_task(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call)
    answer = ctx.elicit("What is your name?", NAME, key="user_name")
    _work(ctx, 0.5)
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


SECONDS = {"type": "number", "minimum": 0, "maximum": 600}
TOOLS: list[tuple[str, str, Any, dict[str, Any], Any]] = [
    ("greet", "Greet someone.", greet, object_schema({"name": {"type": "string"}}, ["name"]), None),
    (
        "slow_compute",
        "Work for some seconds.",
        slow_compute,
        object_schema({"seconds": SECONDS, "label": {"type": "string"}}, []),
        "optional",
    ),
    ("failing_job", "Fail after a second.", failing_job, object_schema({}), "required"),
    ("protocol_error_job", "Ask for roots.", protocol_error_job, object_schema({}), "optional"),
    (
        "confirm_delete",
        "Ask before deleting a file.",
        confirm_delete,
        object_schema({"filename": {"type": "string"}}, ["filename"]),
        "optional",
    ),
    ("multi_input", "Ask two things at once.", multi_input, object_schema({}), "optional"),
    ("test_tool_with_task", "Ask, then work.", tool_with_task, object_schema({}), "required"),
]  # fmt: skip


@hookimpl
def presets_tool_adapters() -> list[ToolAdapter]:
    return [
        ToolAdapter(
            f"tasks.{name}",
            handler=handler,
            description=description,
            input_schema=schema,
            annotations={"readOnlyHint": True},
            name=name,
            task_support=support,
        )
        for name, description, handler, schema, support in TOOLS
    ]
