"""object_schema and runtime_handler: the pieces every plugin's adapters were writing again."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    MissingRuntimeError,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolArgumentError,
    ToolCallError,
    object_schema,
    runtime_handler,
)


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
