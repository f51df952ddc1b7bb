"""The client bench's rules (bench/clients.py): the prompt-cache prefix it counts, and what
its scripted model does at a step. The figures in docs/performance.md rest on these."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DRIVE = Path(__file__).resolve().parents[2] / "bench" / "clientdrive"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"clientbench_{name}", DRIVE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


count = load("count")
steps = load("steps")

TOOL_A = {"type": "function", "function": {"name": "srv_space_a", "parameters": {}}}
TOOL_B = {"type": "function", "function": {"name": "srv_space_b", "parameters": {}}}
SYSTEM = {"role": "system", "content": "You are a helpful agent. " * 20}
USER = {"role": "user", "content": "Please draw a square."}
REPLY = {"role": "assistant", "content": "Done, a square."}


def counted(*bodies: dict[str, object], path: str = "/v1/chat/completions") -> list[object]:
    requests = [count.parse(i + 1, path, body) for i, body in enumerate(bodies)]
    count.count_run(requests, count.Counter())
    return requests


def test_a_request_that_extends_an_earlier_one_is_cached_up_to_where_they_part() -> None:
    first = {"tools": [TOOL_A], "messages": [SYSTEM, USER]}
    second = {"tools": [TOOL_A], "messages": [SYSTEM, USER, REPLY, USER]}
    one, two = counted(first, second)
    assert one.cached_tokens == 0
    assert two.cached_tokens == one.input_tokens
    assert two.uncached_tokens == two.input_tokens - one.input_tokens


def test_a_changed_tools_array_uncaches_the_whole_conversation_after_it() -> None:
    first = {"tools": [TOOL_A, TOOL_B], "messages": [SYSTEM, USER]}
    second = {"tools": [TOOL_B, TOOL_A], "messages": [SYSTEM, USER, REPLY]}
    _, two = counted(first, second)
    assert two.cached_tokens == 0


def test_cache_markers_and_string_content_do_not_break_the_prefix() -> None:
    marked = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Please draw.", "cache_control": {"type": "ephemeral"}}
        ],
    }
    plain = {"role": "user", "content": "Please draw."}
    first = {
        "tools": [{"name": "Read"}],
        "system": [{"type": "text", "text": "sys"}],
        "messages": [marked],
    }
    second = {
        "tools": [{"name": "Read"}],
        "system": [{"type": "text", "text": "sys"}],
        "messages": [plain, REPLY],
    }
    one, two = counted(first, second, path="/v1/messages")
    assert two.cached_tokens == one.input_tokens


def test_a_deferred_tool_is_outside_the_prefix_and_cached_once_loaded() -> None:
    deferred = {"name": "mcp__presets__space_a", "defer_loading": True, "input_schema": {}}
    first = {"tools": [{"name": "Read"}], "system": "sys", "messages": [USER]}
    second = {"tools": [{"name": "Read"}, deferred], "system": "sys", "messages": [USER, REPLY]}
    third = {
        "tools": [{"name": "Read"}, deferred],
        "system": "sys",
        "messages": [USER, REPLY, USER],
    }
    one, two, three = counted(first, second, third, path="/v1/messages")
    assert two.cached_tokens == one.input_tokens  # the new deferred tool broke nothing ...
    tool = count.Counter().tokens(count.chunk(deferred))
    assert two.uncached_tokens >= tool  # ... and was not from cache the first time
    assert three.uncached_tokens < tool + 20  # the second time it was
    assert set(three.ours) == {"space_a"}


def view(offered: list[str], results: list[tuple[str, str]] | None = None) -> object:
    return steps.View(scripted=True, offered=offered, results=results or [])


SCRIPT = {
    "prompt": "p",
    "steps": [
        {
            "tool": "drawing_insert_shape",
            "args": {"shape": "rect"},
            "query": "insert a rectangle",
            "say": "A square.",
        }
    ],
}


def test_the_model_calls_an_offered_tool_directly() -> None:
    act = steps.decide(SCRIPT, view(["srv_space_drawing_insert_shape"]), "call_")
    assert (act.name, act.input, act.say, act.how) == (
        "srv_space_drawing_insert_shape",
        {"shape": "rect"},
        "A square.",
        "direct",
    )


def test_the_model_runs_a_tool_a_notice_named_through_presets_call() -> None:
    notice = '[presets] ...:\n- space_drawing_insert_shape(shape: "rect") - Insert a shape.'
    act = steps.decide(
        SCRIPT,
        view(["srv_space_presets_call", "srv_space_presets_search"], [("call_other", notice)]),
        "call_",
    )
    assert act.name == "srv_space_presets_call"
    assert act.input == {"name": "space_drawing_insert_shape", "arguments": {"shape": "rect"}}


def test_a_tool_marked_risky_goes_through_presets_call_risky() -> None:
    notice = '- space_drawing_insert_shape(shape: "rect") - Insert a shape. [risky]\n- other()'
    offered = ["srv_space_presets_call", "srv_space_presets_call_risky"]
    act = steps.decide(SCRIPT, view(offered, [("call_other", notice)]), "call_")
    assert act.name == "srv_space_presets_call_risky"


def test_the_model_searches_when_told_nothing_then_gives_up() -> None:
    act = steps.decide(SCRIPT, view(["srv_space_presets_search"]), "call_")
    assert (act.name, act.input, act.how) == (
        "srv_space_presets_search",
        {"query": "insert a rectangle"},
        "search",
    )
    tried = [(f"call_h0_{i}", "no match") for i in range(steps.MAX_TRIES)]
    act = steps.decide(SCRIPT, view(["srv_space_presets_search"], tried), "call_")
    assert act.reply == "MISSING drawing_insert_shape"


def test_the_script_is_done_when_every_step_has_a_result() -> None:
    act = steps.decide(SCRIPT, view([], [("call_s0_1", "ok")]), "call_")
    assert act.reply == "SCRIPT_DONE"


def test_a_notice_inside_structured_content_is_read_line_by_line() -> None:
    # Claude Code and Codex show the model a result's structured content: the notice
    # arrives as a JSON string, its lines joined by an escaped newline.
    notice = (
        '{"surface":"canvas","presets_notice":"Now inactive: space_scene_add_cuboid.'
        '\\n- space_drawing_insert_shape(shape: \\"rect\\") - Insert a shape."}'
    )
    act = steps.decide(SCRIPT, view(["srv_space_presets_call"], [("call_other", notice)]), "call_")
    assert act.input == {"name": "space_drawing_insert_shape", "arguments": {"shape": "rect"}}
