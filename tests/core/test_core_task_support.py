"""``task_support`` on a tool adapter: the values it takes, and a clear error for others."""

from __future__ import annotations

from typing import Any

import pytest

from agent_presets import ToolAdapter, object_schema
from agent_presets.lib.model import PresetValidationError


def adapter(**more: Any) -> ToolAdapter:
    return ToolAdapter(
        "demo.build",
        handler=lambda app, args: "built",
        description="Build.",
        input_schema=object_schema({}),
        **more,
    )


@pytest.mark.parametrize("support", [None, "optional", "required"])
def test_a_tool_may_run_as_a_task_on_request_or_only_so(support: str | None) -> None:
    assert adapter(task_support=support).task_support == support


def test_another_value_is_refused_naming_the_ones_it_may_be() -> None:
    with pytest.raises(PresetValidationError) as raised:
        adapter(task_support="sometimes")
    message = str(raised.value)
    assert "'demo.build'" in message and "'sometimes'" in message
    assert "'optional', 'required'" in message
