"""Adapters' titles and output schemas, rich results, and the call context as handlers see it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agent_presets import (
    CallContext,
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolCall,
    ToolResult,
    ToolResultError,
    object_schema,
    results,
)
from agent_presets.server.mcp.wire import success_result, tool_entry

OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class Counter:
    def count(self) -> dict[str, Any]:
        return {"n": 3}


class App:
    counter = Counter()


def _adapter(**options: Any) -> ToolAdapter:
    return ToolAdapter.for_runtime(
        "test.count",
        "counter",
        lambda c, a: c.count(),
        name="test_count",
        description="Counts.",
        input_schema=object_schema(),
        **options,
    )


def _resolve(adapter: ToolAdapter) -> Any:
    registry = ToolAdapterRegistry(App(), namespace_prefix="space_")
    registry.register(adapter)
    return registry.resolve(adapter.id)


def test_title_and_output_schema_reach_the_tool_def_and_tools_list() -> None:
    tool = _resolve(_adapter(title="Count things", output_schema=OUTPUT))
    assert tool.title == "Count things" and dict(tool.output_schema) == OUTPUT
    entry = tool_entry(tool, {})
    assert entry["title"] == "Count things" and entry["outputSchema"] == OUTPUT


def test_a_tool_without_them_lists_as_before() -> None:
    tool = _resolve(_adapter())
    assert tool_entry(tool, {}) == {
        "name": "space_test_count",
        "description": "Counts.",
        "inputSchema": object_schema(),
    }


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"title": ""}, "title must be a non-empty string"),
        ({"output_schema": {"type": "array"}}, "output_schema must be a JSON Schema with type"),
        ({"output_schema": {"type": "object", "properties": 3}}, "output_schema is not a valid"),
    ],
)
def test_bad_titles_and_output_schemas_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(PresetValidationError, match=problem):
        _adapter(**options)


def test_a_result_that_breaks_the_output_schema_is_an_error_naming_the_field() -> None:
    adapter = ToolAdapter(
        "test.bad",
        "",
        "Bad.",
        object_schema(),
        lambda app, a: {"n": "three"},
        name="test_bad",
        output_schema=OUTPUT,
    )
    with pytest.raises(ToolResultError, match=r"space_test_bad returned a result .*'n'"):
        _resolve(adapter).run({})


def test_a_tool_result_structured_part_is_checked_too() -> None:
    adapter = ToolAdapter(
        "test.rich",
        "",
        "Rich.",
        object_schema(),
        lambda app, a: ToolResult([results.text("hi")], structured={}),
        name="test_rich",
        output_schema=OUTPUT,
    )
    with pytest.raises(ToolResultError, match="does not match its output schema"):
        _resolve(adapter).run({})


def test_only_a_handler_that_can_receive_the_context_accepts_it() -> None:
    def with_call(app: Any, arguments: dict[str, Any], call: ToolCall) -> str:
        return call.name

    plain = _resolve(_adapter())
    taking = _resolve(
        ToolAdapter("test.call", "", "Call.", object_schema(), with_call, name="test_call")
    )
    assert not plain.accepts_context
    assert taking.accepts_context


def test_the_context_reaches_the_handler_as_tool_call_context() -> None:
    seen: list[Any] = []

    def handler(app: Any, arguments: dict[str, Any], call: ToolCall) -> None:
        seen.append(call.context)

    tool = _resolve(ToolAdapter("test.ctx", "", "Ctx.", object_schema(), handler, name="test_ctx"))
    marker = object()
    tool.run({}, context=marker)
    tool.run({})
    assert seen == [marker, None]


def test_rich_results_become_content_blocks() -> None:
    image = success_result(results.image(b"png", "image/png"))
    assert image["content"] == [
        {"type": "image", "data": base64.b64encode(b"png").decode(), "mimeType": "image/png"}
    ]
    combined = success_result(
        ToolResult(
            ["text first", results.resource("file:///a.bin", blob=b"\x00", mime="x/y")],
            structured={"n": 1},
        )
    )
    assert combined["content"][0] == {"type": "text", "text": "text first"}
    assert combined["content"][1]["resource"] == {
        "uri": "file:///a.bin",
        "mimeType": "x/y",
        "blob": "AA==",
    }
    assert combined["structuredContent"] == {"n": 1}
    only_structured = success_result(ToolResult(structured={"n": 1}))
    assert only_structured["content"] == [{"type": "text", "text": '{"n": 1}'}]


def test_a_plain_dict_result_is_unchanged() -> None:
    assert success_result({"a": 1}) == {
        "content": [{"type": "text", "text": '{"a": 1}'}],
        "isError": False,
        "resultType": "complete",
        "structuredContent": {"a": 1},
    }


def test_a_resource_needs_text_or_blob() -> None:
    with pytest.raises(TypeError, match="exactly one"):
        results.resource("file:///x")


def test_the_server_context_is_a_call_context() -> None:
    from agent_presets.server.mcp.context import McpCallContext

    for method in ("progress", "log", "elicit", "sample"):
        assert callable(getattr(McpCallContext, method))
    assert isinstance(CallContext, type)
