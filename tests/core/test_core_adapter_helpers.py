"""What adapters share: the one constructor, AdapterKit, the schema helpers, for_runtime."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    AdapterKit,
    MissingRuntimeError,
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolArgumentError,
    ToolCallError,
    object_schema,
    result_schema,
    runtime_handler,
)
from agent_presets.lib.adapters import ToolCall, takes_call

SPACE = "space_"
"""The namespace these tests serve in (a host's, here the Space app's)."""


class Refused(Exception):
    pass


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def add(self, amount: int) -> int:
        if amount > 10:
            raise Refused("amount is over 10; add in smaller steps")
        self.value += amount
        return self.value


def adapter() -> ToolAdapter:
    return ToolAdapter(
        id="counter.add",
        mcp_name="space_counter_add",
        description="Add to the counter.",
        input_schema=object_schema({"amount": {"type": "integer"}}, ["amount"]),
        handler=runtime_handler(
            "counter", "space_counter_add", lambda c, a: c.add(a["amount"]), errors=(Refused,)
        ),
    )


def run(app: Any, arguments: dict[str, Any]) -> Any:
    registry = ToolAdapterRegistry(app)
    registry.register(adapter())
    return registry.resolve("counter.add").run(arguments)


def test_object_schema_refuses_unknown_arguments() -> None:
    app = SimpleNamespace(counter=Counter())
    with pytest.raises(ToolArgumentError, match="'amont' was unexpected"):
        run(app, {"amont": 1})
    assert app.counter.value == 0


def test_object_schema_without_required_has_no_required_key() -> None:
    assert "required" not in object_schema({"a": {"type": "string"}})
    assert object_schema(description="x")["description"] == "x"


def test_result_schema_requires_all_but_the_optional_properties_and_allows_more() -> None:
    schema = result_schema({"n": {"type": "integer"}, "note": {"type": "string"}}, ["note"])
    assert schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["n"],
    }
    assert "required" not in result_schema({"a": {}}, ["a"])
    assert result_schema({}, description="x")["description"] == "x"


def test_result_schema_refuses_an_optional_name_that_is_no_property() -> None:
    with pytest.raises(ValueError, match="optional names no property: nte"):
        result_schema({"note": {"type": "string"}}, ["nte"])


def test_runtime_handler_fetches_the_runtime_at_call_time() -> None:
    app = SimpleNamespace(counter=Counter())
    assert run(app, {"amount": 2}) == 2
    app.counter = Counter()
    assert run(app, {"amount": 3}) == 3


def test_runtime_handler_turns_the_runtime_refusal_into_a_tool_error() -> None:
    with pytest.raises(ToolCallError) as info:
        run(SimpleNamespace(counter=Counter()), {"amount": 11})
    assert str(info.value) == "space_counter_add: amount is over 10; add in smaller steps"


def test_runtime_handler_names_a_missing_runtime() -> None:
    with pytest.raises(MissingRuntimeError, match=r"space_counter_add requires app\.counter"):
        run(SimpleNamespace(), {"amount": 1})


def test_runtime_handler_lets_other_errors_through() -> None:
    class Broken:
        def add(self, amount: int) -> int:
            raise KeyError("bug")

    with pytest.raises(KeyError):
        run(SimpleNamespace(counter=Broken()), {"amount": 1})


# ------------------------------------------------------------------ ToolAdapter.for_runtime


def counter_adapter(**changes: Any) -> ToolAdapter:
    options: dict[str, Any] = {
        "mcp_name": "space_counter_add",
        "description": "Add to the counter.",
        "input_schema": object_schema({"amount": {"type": "integer"}}, ["amount"]),
        "errors": (Refused,),
        **changes,
    }
    action = options.pop("action", lambda c, a: c.add(a["amount"]))
    return ToolAdapter.for_runtime("counter.add", "counter", action, **options)


class RenamingRegistry(ToolAdapterRegistry):
    """Stands for a host whose namespace changes the name clients see (the third-party issue)."""

    def mcp_name(self, adapter: ToolAdapter) -> str:
        return "myapp_" + adapter.mcp_name.removeprefix("space_")


def run_for_runtime(app: Any, arguments: dict[str, Any], registry: ToolAdapterRegistry) -> Any:
    registry.app = app
    registry.register(counter_adapter())
    return registry.resolve("counter.add").run(arguments)


def test_for_runtime_builds_the_adapter_a_hand_written_one_would_be() -> None:
    built = counter_adapter(annotations={"idempotentHint": True}, source="counter-plugin")
    assert built == ToolAdapter(
        "counter.add",
        mcp_name="space_counter_add",
        description="Add to the counter.",
        input_schema=object_schema({"amount": {"type": "integer"}}, ["amount"]),
        handler=print,
        annotations={"idempotentHint": True},
    )
    assert built.source == "counter-plugin"
    assert dict(built.annotations or {}) == {"idempotentHint": True}
    app = SimpleNamespace(counter=Counter())
    assert run_for_runtime(app, {"amount": 4}, ToolAdapterRegistry(namespace_prefix=SPACE)) == 4


def test_for_runtime_fetches_the_runtime_at_call_time() -> None:
    registry = ToolAdapterRegistry(namespace_prefix=SPACE)
    registry.register(counter_adapter())
    app = SimpleNamespace(counter=Counter())
    tool = registry.resolve("counter.add", app)
    assert tool.run({"amount": 2}) == 2
    app.counter = Counter()
    assert tool.run({"amount": 3}) == 3


def test_for_runtime_errors_name_the_tool_as_the_registry_resolved_it() -> None:
    with pytest.raises(ToolCallError) as info:
        run_for_runtime(SimpleNamespace(counter=Counter()), {"amount": 11}, RenamingRegistry(None))
    assert str(info.value) == "myapp_counter_add: amount is over 10; add in smaller steps"
    with pytest.raises(MissingRuntimeError) as missing:
        run_for_runtime(SimpleNamespace(), {"amount": 1}, RenamingRegistry(None))
    assert str(missing.value).startswith("myapp_counter_add requires app.counter")


def test_a_resolved_tool_is_named_by_the_registry() -> None:
    registry = RenamingRegistry(None)
    registry.register(counter_adapter())
    assert registry.resolve("counter.add").name == "myapp_counter_add"


def test_for_runtime_errors_name_the_adapter_when_its_handler_is_called_directly() -> None:
    adapter = counter_adapter()
    with pytest.raises(ToolCallError, match=r"^space_counter_add: amount is over 10"):
        adapter.handler(SimpleNamespace(counter=Counter()), {"amount": 11})
    with pytest.raises(MissingRuntimeError, match=r"^space_counter_add requires app\.counter"):
        adapter.handler(SimpleNamespace(), {"amount": 1})


def test_for_runtime_lets_other_errors_through() -> None:
    class Broken:
        def add(self, amount: int) -> int:
            raise KeyError("bug")

    with pytest.raises(KeyError):
        run_for_runtime(
            SimpleNamespace(counter=Broken()),
            {"amount": 1},
            ToolAdapterRegistry(namespace_prefix=SPACE),
        )


def test_for_runtime_does_not_rename_a_tool_error_raised_inside_the_action() -> None:
    def refuse(counter: Counter, arguments: dict[str, Any]) -> Any:
        raise ToolCallError("space_counter_add: switch to the counter surface first")

    adapter = counter_adapter(action=refuse, errors=(Exception,))
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(adapter)
    with pytest.raises(ToolCallError) as info:
        registry.resolve("counter.add").run({"amount": 1})
    assert str(info.value) == "space_counter_add: switch to the counter surface first"


def test_an_action_with_a_third_parameter_gets_the_call() -> None:
    seen: list[ToolCall] = []

    def add(counter: Counter, arguments: dict[str, Any], call: ToolCall) -> int:
        seen.append(call)
        return counter.add(arguments["amount"])

    registry = RenamingRegistry(SimpleNamespace(counter=Counter()))
    registry.register(counter_adapter(action=add))
    assert registry.resolve("counter.add").run({"amount": 5}) == 5
    assert seen == [ToolCall("myapp_counter_add", "counter.add")]
    assert seen[0].context is None


def test_a_plain_handler_with_a_third_parameter_gets_the_call() -> None:
    seen: list[Any] = []
    registry = ToolAdapterRegistry(namespace_prefix=SPACE)
    registry.register(
        ToolAdapter(
            "a.b",
            mcp_name="space_a_b",
            description="d",
            input_schema={"type": "object"},
            handler=lambda app, a, call: seen.append(call),
        )
    )
    registry.register(
        ToolAdapter(
            "a.c",
            mcp_name="space_a_c",
            description="d",
            input_schema={"type": "object"},
            handler=lambda app, a: seen.append(a),
        )
    )
    registry.resolve("a.b").run({})
    registry.resolve("a.c").run({"x": 1})
    assert seen == [ToolCall("space_a_b", "a.b"), {"x": 1}]


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (lambda app, arguments: None, False),
        (lambda app, arguments, call: None, True),
        (lambda app, arguments, *, context=None: None, False),
        (lambda *args: None, False),
        (print, False),
        (runtime_handler("counter", "space_counter_add", lambda c, a: None), True),
    ],
)
def test_takes_call_counts_positional_parameters(function: Any, expected: bool) -> None:
    assert takes_call(function) is expected


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"runtime": "not an attribute"}, "must name an app attribute"),
        ({"action": "not callable"}, "action must be callable"),
        ({"errors": (ValueError, "oops")}, "errors must be exception classes"),
        ({"mcp_name": "Space-Tool"}, "snake_case"),
        ({"input_schema": {"type": "array"}}, "type: object"),
    ],
)
def test_for_runtime_rejects_a_malformed_adapter(changes: dict[str, Any], words: str) -> None:
    options: dict[str, Any] = {
        "mcp_name": "space_counter_add",
        "description": "Add.",
        "input_schema": object_schema(),
    }
    runtime = changes.pop("runtime", "counter")
    action = changes.pop("action", lambda c, a: None)
    with pytest.raises(PresetValidationError, match=words):
        ToolAdapter.for_runtime("counter.add", runtime, action, **{**options, **changes})


def test_a_context_given_to_run_reaches_the_action_as_call_context() -> None:
    seen: list[ToolCall] = []

    def add(counter: Counter, arguments: dict[str, Any], call: ToolCall) -> int:
        seen.append(call)
        return counter.add(arguments["amount"])

    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(counter_adapter(action=add))
    tool = registry.resolve("counter.add")
    context = object()
    assert tool.run({"amount": 2}, context=context) == 2
    assert tool.run({"amount": 3}) == 5
    assert seen == [
        ToolCall("space_counter_add", "counter.add", context),
        ToolCall("space_counter_add", "counter.add"),
    ]


# ------------------------------------------------------------------ the default MCP name


@pytest.mark.parametrize(
    ("tool_id", "served"),
    [
        ("drawing.set-tool", "space_drawing_set_tool"),
        ("unit.apply-patch", "space_unit_apply_patch"),
        ("app.run-bash", "space_app_run_bash"),
        ("a.b", "space_a_b"),
    ],
)
def test_an_adapter_without_a_name_is_served_as_its_tool_id(tool_id: str, served: str) -> None:
    built = ToolAdapter.for_runtime(
        tool_id, "counter", lambda c, a: 1, description="D.", input_schema=object_schema()
    )
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(built)
    assert registry.resolve(tool_id).name == served
    assert ToolAdapterRegistry(namespace_prefix="myapp_").mcp_name(built) == "myapp_" + served[6:]


def test_name_still_overrides_the_default() -> None:
    built = ToolAdapter.for_runtime(
        "counter.add",
        "counter",
        lambda c, a: 1,
        name="counter_plus",
        description="D.",
        input_schema=object_schema(),
    )
    assert ToolAdapterRegistry(namespace_prefix=SPACE).mcp_name(built) == "space_counter_plus"


# ------------------------------------------------------------------ one constructor, one kit


def keyword_adapter(**changes: Any) -> ToolAdapter:
    options: dict[str, Any] = {
        "runtime": "counter",
        "action": lambda c, a: c.add(a["amount"]),
        "errors": (Refused,),
        "description": "Add to the counter.",
        "input_schema": object_schema({"amount": {"type": "integer"}}, ["amount"]),
        **changes,
    }
    return ToolAdapter("counter.add", **options)


def test_the_keyword_constructor_builds_a_runtime_tool_named_after_its_id() -> None:
    built = keyword_adapter()
    assert built.name == "counter_add"
    assert built.runtime == "counter"
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(built)
    tool = registry.resolve("counter.add")
    assert tool.name == "space_counter_add"
    assert tool.run({"amount": 4}) == 4
    with pytest.raises(ToolCallError) as refused:
        tool.run({"amount": 11})
    assert str(refused.value) == "space_counter_add: amount is over 10; add in smaller steps"


def test_the_keyword_constructor_takes_a_plain_handler() -> None:
    built = ToolAdapter(
        "counter.peek",
        description="Peek.",
        input_schema=object_schema(),
        handler=lambda app, a: app.counter.value,
    )
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(built)
    assert registry.resolve("counter.peek").run({}) == 0


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"handler": print}, "give handler= or runtime= with action=, not both"),
        ({"runtime": None}, "action= acts on a runtime: give runtime="),
        ({"action": None}, "errors= are the refusals of a runtime's action"),
        ({"action": None, "errors": ()}, "give what the tool does"),
    ],
)
def test_the_keyword_constructor_says_what_is_missing(changes: dict[str, Any], words: str) -> None:
    with pytest.raises(PresetValidationError, match=words):
        keyword_adapter(**changes)


def test_the_older_positional_form_still_works_and_warns() -> None:
    handler = runtime_handler("counter", "counter_add", lambda c, a: c.add(a["amount"]))
    schema = object_schema({"amount": {"type": "integer"}}, ["amount"])
    with pytest.warns(DeprecationWarning, match="pass keywords") as warned:
        prefixed = ToolAdapter("counter.add", "space_counter_add", "Add.", schema, handler)
    assert warned[0].filename == __file__  # the warning points at the caller, not the core
    with pytest.warns(DeprecationWarning):
        named = ToolAdapter("counter.add", "", "Add.", schema, handler, name="counter_plus")
    with pytest.warns(DeprecationWarning):
        defaulted = ToolAdapter("counter.add", "", "Add.", schema, handler)
    registry = ToolAdapterRegistry(namespace_prefix=SPACE)
    assert [registry.mcp_name(a) for a in (prefixed, named, defaulted)] == [
        "space_counter_add",
        "space_counter_plus",
        "space_counter_add",
    ]
    keyword = ToolAdapter("counter.add", description="Add.", input_schema=schema, handler=handler)
    assert defaulted == keyword
    with pytest.raises(TypeError, match="both by position and as a keyword"):
        ToolAdapter("counter.add", "", "Add.", schema, handler, description="Twice.")  # type: ignore[call-overload]


def test_an_adapter_kit_gives_the_runtime_and_its_errors_once() -> None:
    kit = AdapterKit("counter", errors=(Refused,))
    add = kit.adapter(
        "counter.add",
        lambda c, a: c.add(a["amount"]),
        description="Add.",
        input_schema=object_schema({"amount": {"type": "integer"}}, ["amount"]),
    )
    assert add == keyword_adapter(description="Add.")
    assert add.runtime == "counter"
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()), namespace_prefix=SPACE)
    registry.register(add)
    with pytest.raises(ToolCallError, match=r"^space_counter_add: amount is over 10"):
        registry.resolve("counter.add").run({"amount": 11})
    with pytest.raises(PresetValidationError, match="must name an app attribute"):
        AdapterKit("not an attribute")


def add_amount(counter: Counter, arguments: dict[str, Any]) -> int:
    return counter.add(arguments["amount"])


def _reset(counter: Counter, arguments: dict[str, Any]) -> int:
    counter.value = 0
    return 0


def list_(counter: Counter, arguments: dict[str, Any]) -> list[int]:
    return [counter.value]


def test_a_kit_adapter_takes_its_tool_id_from_the_action_s_name() -> None:
    kit, schema = AdapterKit("counter", errors=(Refused,)), object_schema()
    amount = object_schema({"amount": {"type": "integer"}})
    made = [kit.adapter(f, description="Do.", input_schema=amount) for f in (add_amount, _reset)]
    assert [(a.id, a.mcp_name) for a in made] == [
        ("counter.add-amount", "counter_add_amount"),
        ("counter.reset", "counter_reset"),
    ]
    # A trailing underscore keeps a builtin's name free; prefix= when ids are not the runtime's.
    tally = AdapterKit("counter", prefix="tally")
    assert tally.adapter(list_, description="List.", input_schema=schema).id == "tally.list"
    # The id as written still works, for an action whose name cannot be the tool's.
    written = kit.adapter("counter.add", add_amount, description="A.", input_schema=schema)
    assert written.id == "counter.add"
    registry = ToolAdapterRegistry(SimpleNamespace(counter=Counter()))
    registry.register(made[0])
    with pytest.raises(ToolCallError, match=r"^counter_add_amount: amount is over 10"):
        registry.resolve("counter.add-amount").run({"amount": 11})


def test_a_kit_refuses_an_action_whose_name_makes_no_tool_id() -> None:
    kit, schema = AdapterKit("counter"), object_schema()
    with pytest.raises(PresetValidationError, match="name its function after the tool"):
        kit.adapter(lambda c, a: 0, description="No name.", input_schema=schema)
    with pytest.raises(TypeError, match="give the action after the tool id"):
        kit.adapter("counter.add", description="No action.", input_schema=schema)


def test_an_adapter_knows_the_line_that_made_it() -> None:
    kit, schema = AdapterKit("counter"), object_schema()
    here = sys._getframe().f_lineno + 1
    made = kit.adapter("counter.x", print, description="X.", input_schema=schema)
    assert made.defined_at == (__file__, here)
    derived = kit.adapter(add_amount, description="Add.", input_schema=schema)
    assert derived.defined_at == (__file__, here + 2)
    assert ToolAdapter.for_runtime(
        "counter.y", "counter", print, description="Y.", input_schema=schema
    ).defined_at == (__file__, here + 4)
