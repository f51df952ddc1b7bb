"""Tool adapters: the app at call time, loud missing runtimes, arguments checked first."""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from json_strategies import HUGE_INTEGERS, nested

from agent_presets import (
    DuplicateToolError,
    MissingRuntimeError,
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolArgumentError,
    ToolCallError,
    require_runtime,
)

SET_TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "tool": {"enum": ["select", "rect", "line"]},
        "size": {"type": "integer", "minimum": 1},
    },
    "required": ["tool"],
    "additionalProperties": False,
}


class Drawing:
    def __init__(self, label: str) -> None:
        self.label = label
        self.tools: list[str] = []

    def set_tool(self, tool: str) -> str:
        self.tools.append(tool)
        return f"{self.label}:{tool}"


def python_lines(code: str) -> list[str]:
    """What a fresh interpreter running ``code`` prints, line by line (its imports are its own)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def set_tool(app: Any, arguments: dict[str, Any]) -> str:
    drawing = require_runtime(app, "drawing", "space_drawing_set_tool")
    return drawing.set_tool(arguments["tool"])


@pytest.fixture
def adapters() -> ToolAdapterRegistry:
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            id="drawing.set-tool",
            mcp_name="space_drawing_set_tool",
            description="Switch the active drawing tool.",
            input_schema=SET_TOOL_SCHEMA,
            handler=set_tool,
        )
    )
    return registry


# ------------------------------------------------------------------ app at call time


def test_the_handler_gets_the_app_at_call_time(adapters):
    app = SimpleNamespace(drawing=Drawing("first"))
    tool = adapters.resolve("drawing.set-tool", app)
    assert tool.run({"tool": "rect"}) == "first:rect"

    replacement = Drawing("second")
    app.drawing = replacement
    assert tool.run({"tool": "line"}) == "second:line"
    assert replacement.tools == ["line"]


def test_a_runtime_attached_after_resolution_is_found(adapters):
    app = SimpleNamespace()
    tool = adapters.resolve("drawing.set-tool", app)
    app.drawing = Drawing("late")
    assert tool.run({"tool": "select"}) == "late:select"


def test_tool_defs_from_the_manager_follow_the_app_too(make_stack, make_preset, adapters):
    app = SimpleNamespace(drawing=Drawing("old"))
    stack = make_stack(
        [make_preset("drawing-tools", ["drawing.set-tool"])],
        list(adapters.list()),
        app=app,
    )
    tool = stack.tools.get("space_drawing_set_tool")
    assert tool is not None
    assert tool.run({"tool": "rect"}) == "old:rect"
    app.drawing = Drawing("new")
    assert tool.run({"tool": "rect"}) == "new:rect"


def test_the_registry_app_is_used_when_resolve_gets_none(adapters):
    adapters.app = SimpleNamespace(drawing=Drawing("registry"))
    assert adapters.resolve("drawing.set-tool").run({"tool": "line"}) == "registry:line"


# ------------------------------------------------------------------ missing runtime


def test_a_missing_runtime_is_a_clear_error_naming_it(adapters):
    tool = adapters.resolve("drawing.set-tool", SimpleNamespace())
    with pytest.raises(MissingRuntimeError) as info:
        tool.run({"tool": "rect"})
    message = str(info.value)
    assert "app.drawing" in message
    assert "space_drawing_set_tool" in message
    assert isinstance(info.value, ToolCallError)


def test_a_runtime_removed_between_calls_is_reported(adapters):
    app = SimpleNamespace(drawing=Drawing("gone-soon"))
    tool = adapters.resolve("drawing.set-tool", app)
    tool.run({"tool": "rect"})
    app.drawing = None
    with pytest.raises(MissingRuntimeError, match=r"app\.drawing"):
        tool.run({"tool": "rect"})


@pytest.mark.parametrize("app", [None, SimpleNamespace(), SimpleNamespace(graph=None)])
def test_require_runtime_fails_loudly_for_absent_or_none(app):
    with pytest.raises(MissingRuntimeError) as info:
        require_runtime(app, "graph", "space_graph_add_node")
    assert str(info.value).startswith("space_graph_add_node requires app.graph")


def test_require_runtime_returns_the_runtime():
    graph = object()
    assert require_runtime(SimpleNamespace(graph=graph), "graph", "t") is graph


# ------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"tool": "brush"}, "argument 'tool'"),
        ({"tool": 3}, "argument 'tool'"),
        ({"tool": "rect", "size": 0}, "argument 'size'"),
        ({"tool": "rect", "size": "big"}, "argument 'size'"),
        ({}, "'tool' is a required property"),
        ({"tool": "rect", "colour": "red"}, "'colour'"),
    ],
)
def test_arguments_are_validated_before_the_handler_runs(arguments, words):
    calls: list[dict[str, Any]] = []
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            "drawing.set-tool",
            mcp_name="space_drawing_set_tool",
            description="Switch the active drawing tool.",
            input_schema=SET_TOOL_SCHEMA,
            handler=lambda app, args: calls.append(args),
        )
    )
    tool = registry.resolve("drawing.set-tool", SimpleNamespace())
    with pytest.raises(ToolArgumentError) as info:
        tool.run(arguments)
    assert calls == []
    message = str(info.value)
    assert message.startswith("space_drawing_set_tool: ")
    assert words in message


def test_a_missing_required_argument_error_lists_what_is_expected(adapters):
    tool = adapters.resolve("drawing.set-tool", SimpleNamespace(drawing=Drawing("d")))
    with pytest.raises(ToolArgumentError) as info:
        tool.run({})
    assert "expected {tool, size} with tool required" in str(info.value)


def test_bad_arguments_are_rejected_even_when_the_runtime_is_missing(adapters):
    tool = adapters.resolve("drawing.set-tool", SimpleNamespace())
    with pytest.raises(ToolArgumentError):
        tool.run({"tool": "brush"})


def test_the_handler_gets_a_copy_of_the_arguments():
    seen: list[dict[str, Any]] = []
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            "a.b",
            mcp_name="space_a_b",
            description="d",
            input_schema={"type": "object"},
            handler=lambda app, a: seen.append(a),
        )
    )
    tool = registry.resolve("a.b")
    arguments = {"x": 1}
    tool.run(arguments)
    tool.run(None)
    assert seen == [{"x": 1}, {}]
    assert seen[0] is not arguments


# ------------------------------------------------------------------ adapter definitions


def test_a_resolved_tool_carries_the_adapter_metadata(adapters):
    tool = adapters.resolve("drawing.set-tool")
    assert tool.name == "space_drawing_set_tool"
    assert tool.description == "Switch the active drawing tool."
    assert dict(tool.input_schema) == SET_TOOL_SCHEMA
    assert tool.managed_source == "drawing.set-tool"


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"id": "no-dots"}, "must be dotted"),
        ({"mcp_name": "Space-Tool"}, "snake_case"),
        ({"description": "  "}, "description"),
        ({"input_schema": {"type": "array"}}, "type: object"),
        ({"input_schema": {"type": "object", "properties": 3}}, "not a valid JSON Schema"),
        ({"handler": "not callable"}, "handler must be callable"),
        ({"annotations": {"dangerHint": True}}, "unknown annotation"),
    ],
)
def test_malformed_adapters_are_rejected(changes, words):
    fields: dict[str, Any] = {
        "id": "a.b",
        "mcp_name": "space_a_b",
        "description": "d",
        "input_schema": {"type": "object"},
        "handler": lambda app, a: None,
    }
    with pytest.raises(PresetValidationError, match=words):
        ToolAdapter(**{**fields, **changes})


def test_adapter_schema_and_annotations_are_frozen():
    schema = {"type": "object", "properties": {}}
    adapter = ToolAdapter(
        "a.b",
        mcp_name="space_a_b",
        description="d",
        input_schema=schema,
        handler=lambda app, a: None,
        annotations={"readOnlyHint": True},
    )
    schema["type"] = "array"
    assert adapter.input_schema["type"] == "object"
    with pytest.raises(TypeError):
        adapter.annotations["readOnlyHint"] = False  # type: ignore[index]


def test_the_registry_rejects_a_duplicate_adapter_id_naming_both_sources():
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            "a.b",
            mcp_name="space_a_b",
            description="d",
            input_schema={"type": "object"},
            handler=print,
            source="one",
        )
    )
    with pytest.raises(DuplicateToolError) as info:
        registry.register(
            ToolAdapter(
                "a.b",
                mcp_name="space_a_c",
                description="d",
                input_schema={"type": "object"},
                handler=print,
                source="two",
            )
        )
    assert "by one and by two" in str(info.value)


def test_the_registry_requires_the_namespace_prefix():
    registry = ToolAdapterRegistry(namespace_prefix="space_")
    with pytest.raises(PresetValidationError, match="must start with 'space_'"):
        registry.register(
            ToolAdapter(
                "a.b",
                mcp_name="other_a_b",
                description="d",
                input_schema={"type": "object"},
                handler=print,
            )
        )
    assert (
        ToolAdapterRegistry(namespace_prefix=None).register(
            ToolAdapter(
                "a.b",
                mcp_name="other_a_b",
                description="d",
                input_schema={"type": "object"},
                handler=print,
            )
        )
        is None
    )


def test_resolving_an_unknown_tool_id_says_what_to_do(adapters):
    with pytest.raises(PresetValidationError) as info:
        adapters.resolve("drawing.nothing")
    assert "no tool adapter provides tool id 'drawing.nothing'" in str(info.value)
    assert "install the plugin" in str(info.value)


def test_unregister_and_listing(adapters):
    assert [a.id for a in adapters.list()] == ["drawing.set-tool"]
    assert "drawing.set-tool" in adapters and len(adapters) == 1
    adapters.unregister("drawing.set-tool")
    assert adapters.get("drawing.set-tool") is None
    assert len(adapters) == 0


# ------------------------------------------------------------------ numbers are numbers

FINITE = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
KEYS = st.text("abcxyz_", min_size=1, max_size=4)
JSON_VALUES = st.recursive(
    FINITE,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(KEYS, inner, max_size=2),
    max_leaves=6,
)
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
UNUSABLE = st.one_of(
    st.sampled_from(sorted(NON_FINITE)).map(
        lambda spelling: (NON_FINITE[spelling], f"{spelling} is not a number; give a finite number")
    ),
    HUGE_INTEGERS.map(
        lambda n: (
            n,
            f"an integer of about {'-' if n < 0 else ''}10**{math.floor(math.log10(abs(n)))} "
            "is out of range; give a number between -1e308 and 1e308",
        )
    ),
)
"""A number no tool can compute with, and what the refusal says about it."""


seen_calls: list[dict[str, Any]] = []


@functools.cache
def any_object_tool() -> Any:
    """One tool taking any object, built once: hypothesis calls it for every example."""
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            "a.b",
            mcp_name="space_a_b",
            description="d",
            input_schema={"type": "object"},
            handler=lambda app, a: seen_calls.append(a),
        )
    )
    return registry.resolve("a.b")


@st.composite
def planted(draw: st.DrawFn) -> tuple[dict[str, Any], str, str]:
    """Arguments with one unusable number somewhere among finite values, its path, the problem."""
    value: Any
    value, problem = draw(UNUSABLE)
    path: list[str] = []
    for depth in range(draw(st.integers(0, 3)), -1, -1):
        if depth == 0 or draw(st.booleans()):
            key = draw(KEYS)
            siblings = draw(st.dictionaries(KEYS, JSON_VALUES, max_size=2))
            value = {**siblings, key: value}
            path.insert(0, key)
        else:
            before = draw(st.lists(JSON_VALUES, max_size=2))
            after = draw(st.lists(JSON_VALUES, max_size=2))
            value = [*before, value, *after]
            path.insert(0, str(len(before)))
    return value, ".".join(path), problem


@given(planted())
def test_a_non_finite_or_huge_number_anywhere_in_the_arguments_is_refused_by_path(
    case: tuple[dict[str, Any], str, str],
) -> None:
    arguments, path, problem = case
    seen_calls.clear()
    with pytest.raises(ToolArgumentError) as info:
        any_object_tool().run(arguments)
    assert str(info.value) == f"space_a_b: argument {path!r}: {problem}"
    assert seen_calls == []


@given(st.dictionaries(KEYS, JSON_VALUES, max_size=3))
def test_finite_arguments_pass_the_number_check(arguments: dict[str, Any]) -> None:
    seen_calls.clear()
    any_object_tool().run(arguments)
    assert seen_calls == [arguments]


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_a_number_argument_refuses_what_json_reads_as_non_finite(adapters, text):
    # Python's json reads these; JSON Schema's `type: number` and `minimum` let NaN through.
    arguments = json.loads(f'{{"tool": "rect", "size": {text}}}')
    drawing = Drawing("d")
    tool = adapters.resolve("drawing.set-tool", SimpleNamespace(drawing=drawing))
    with pytest.raises(ToolArgumentError) as info:
        tool.run(arguments)
    assert str(info.value) == (
        f"space_drawing_set_tool: argument 'size': {text} is not a number; give a finite number"
    )
    assert drawing.tools == []


def test_importing_the_adapters_module_does_not_import_jsonschema():
    # The package itself imports lazily, so this counts the package and the adapters module.
    code = (
        "import sys\n"
        "import agent_presets.lib.adapters\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'))\n"
    )
    lines = python_lines(code)
    assert lines == ["[]"]


def test_valid_arguments_are_checked_without_importing_jsonschema():
    # The quick check passes them; jsonschema is imported only to judge a doubtful call.
    code = (
        "import sys\n"
        "from agent_presets import ToolAdapter, ToolAdapterRegistry, ToolArgumentError\n"
        "registry = ToolAdapterRegistry()\n"
        "schema = {'type': 'object', 'properties': {'n': {'type': 'integer', 'maximum': 9}},\n"
        "          'required': ['n'], 'additionalProperties': False}\n"
        "registry.register(ToolAdapter('a.b', 'space_a_b', 'A.', schema, lambda app, a: a))\n"
        "tool = registry.resolve('a.b')\n"
        "tool.run({'n': 3})\n"
        "print('jsonschema' in sys.modules)\n"
        "try:\n"
        "    tool.run({'n': 10})\n"
        "except ToolArgumentError as exc:\n"
        "    print(exc)\n"
        "print('jsonschema' in sys.modules)\n"
    )
    lines = python_lines(code)
    assert lines == [
        "False",
        "space_a_b: argument 'n': 10 is greater than the maximum of 9",
        "True",
    ]


QUICK_KEYWORDS = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "uniqueItems",
    "pattern",
    "anyOf",
    "allOf",
    "if",
    "then",
    "else",
    "$defs",
    "$ref",
    "oneOf",
    "not",
    "prefixItems",
]
schema_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(-2, 2, allow_nan=False),
    st.sampled_from(["object", "string", "integer", "number", "array", "a", "^a", "#/$defs/a"]),
)
schema_values = nested(schema_scalars, [*QUICK_KEYWORDS, "a", "b"])
instances = nested(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(-3, 3, allow_nan=False),
        st.sampled_from(["", "a", "ab", "b"]),
        HUGE_INTEGERS,
    ),
    ["a", "b"],
    max_leaves=8,
)


@given(st.dictionaries(st.sampled_from(QUICK_KEYWORDS), schema_values, max_size=4), instances)
def test_the_quick_argument_check_passes_only_what_jsonschema_accepts(
    properties: dict[str, Any], value: Any
) -> None:
    import jsonschema

    from agent_presets.lib.metaschema import schema_problem

    schema = {"type": "object", "properties": {"a": properties}}
    if schema_problem(schema) is not None:
        return
    registry = ToolAdapterRegistry()
    registry.register(
        ToolAdapter(
            "a.b",
            mcp_name="space_a_b",
            description="A.",
            input_schema=schema,
            handler=lambda app, a: a,
        )
    )
    arguments = {"a": value}
    try:
        registry.resolve("a.b").run(arguments)
    except ToolArgumentError as refused:
        # jsonschema takes 10**400 for a number; the check refuses it before asking.
        assert "is out of range" in str(refused) or not (
            jsonschema.Draft202012Validator(schema).is_valid(arguments)
        )
    else:
        assert jsonschema.Draft202012Validator(schema).is_valid(arguments)


def test_resolving_a_tool_with_an_output_schema_does_not_import_jsonschema():
    # `presets serve` resolves every active tool before it answers; the check waits for a call.
    code = (
        "import sys\n"
        "from agent_presets import ToolAdapter, ToolAdapterRegistry, object_schema\n"
        "adapter = ToolAdapter.for_runtime('t.count', 'counter', lambda c, a: {'n': 1},\n"
        "    name='t_count', description='Counts.', input_schema=object_schema(),\n"
        "    output_schema={'type': 'object', 'properties': {'n': {'type': 'integer'}}})\n"
        "registry = ToolAdapterRegistry(None)\n"
        "registry.register(adapter)\n"
        "tool = registry.resolve('t.count')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jsonschema'))\n"
    )
    lines = python_lines(code)
    assert lines == ["[]"]


def test_a_valid_structured_result_is_checked_without_importing_jsonschema():
    # The quick reading passes it; a result it doubts goes to jsonschema, which decides.
    code = (
        "import sys\n"
        "from agent_presets import ToolAdapter, ToolAdapterRegistry, ToolResultError\n"
        "from agent_presets import object_schema\n"
        "results = iter([{'n': 1}, {'n': 'one'}])\n"
        "adapter = ToolAdapter.for_runtime('t.count', 'counter', lambda c, a: next(results),\n"
        "    name='t_count', description='Counts.', input_schema=object_schema(),\n"
        "    output_schema={'type': 'object', 'properties': {'n': {'type': 'integer'}},\n"
        "                   'required': ['n']})\n"
        "class App:\n"
        "    counter = object()\n"
        "registry = ToolAdapterRegistry(App(), namespace_prefix='space_')\n"
        "registry.register(adapter)\n"
        "tool = registry.resolve('t.count')\n"
        "print(tool.run({}))\n"
        "print('jsonschema' in sys.modules)\n"
        "try:\n"
        "    tool.run({})\n"
        "except ToolResultError as exc:\n"
        "    print(str(exc).split(';')[0])\n"
    )
    lines = python_lines(code)
    assert lines == [
        "{'n': 1}",
        "False",
        "space_t_count returned a result that does not match its output schema "
        "(result field 'n': 'one' is not of type 'integer')",
    ]
