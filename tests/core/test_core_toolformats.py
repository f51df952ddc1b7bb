"""What the budget counts is what each client sends its model (docs/budget.md).

``tests/data/client_tools/CLIENT.json`` holds tools as the real clients sent
them to a scripted model (Claude Code 2.1.332, Codex 0.171.0, opencode
1.18.33, through the shared client drivers), each beside the ``tools/list``
entry ``presets serve`` had sent the client for it. The budget's count of
each entry, in that client's format, must be the count of what the client
sent, within 5%.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_presets.lib.budget import Budget, get_tokenizer
from agent_presets.lib.toolformats import (
    CLAUDE_ALLOF_NOTE,
    CLIENTS,
    UnknownClientError,
    compact,
    model_parts,
    model_tool,
)

SAMPLES = Path(__file__).parents[1] / "data" / "client_tools"
RECORDED = ("claude-code", "codex", "opencode")


def sample(client: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAMPLES / f"{client}.json").read_text())
    assert data["client"] == client
    return data


@pytest.mark.parametrize("client", RECORDED)
def test_each_client_format_counts_what_the_client_sent_its_model_within_5_percent(
    client: str,
) -> None:
    data = sample(client)
    budget = Budget(get_tokenizer(), client=client, server=data["server_key"])
    counted = sent = 0
    for tool in data["tools"]:
        ours = budget.entry(tool["entry"])
        theirs = budget.count(compact(tool["sent"]))
        assert abs(ours - theirs) <= 0.05 * theirs, tool["entry"]["name"]
        counted, sent = counted + ours, sent + theirs
    assert abs(counted - sent) <= 0.05 * sent
    # The whole tools/list entry, which the budget used to count, is far more.
    wire = Budget(get_tokenizer(), client="wire")
    assert sum(wire.entry(t["entry"]) for t in data["tools"]) > 1.5 * sent


@pytest.mark.parametrize("client", RECORDED)
def test_each_recorded_definition_is_rebuilt_from_its_entry(client: str) -> None:
    data = sample(client)
    for tool in data["tools"]:
        rebuilt = model_tool(tool["entry"], client, server=data["server_key"])
        assert compact(rebuilt) == compact(tool["sent"]), tool["entry"]["name"]


def test_claude_code_flattens_a_top_level_all_of_and_says_so() -> None:
    [shape] = [
        t["sent"]
        for t in sample("claude-code")["tools"]
        if t["entry"]["name"] == "space_drawing_insert_shape"
    ]
    assert shape["description"].startswith(CLAUDE_ALLOF_NOTE)
    assert "allOf" not in shape["input_schema"]


def test_an_unknown_client_format_is_refused_with_the_choices() -> None:
    with pytest.raises(UnknownClientError, match="use one of: claude-code, codex, opencode, wire"):
        Budget(get_tokenizer(), client="cursor")


# Entries as any plugin could serve them: the parts a client drops must never be counted.
schema_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "description", "enum", "pattern", "minimum", "x"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
input_schemas = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={
        "properties": st.dictionaries(
            st.text(min_size=1, max_size=5),
            st.dictionaries(
                st.sampled_from(["type", "description", "enum", "minLength", "default"]),
                schema_values,
                max_size=3,
            ),
            max_size=3,
        ),
        "required": st.lists(st.text(max_size=5), max_size=2),
        "additionalProperties": st.booleans(),
        "allOf": st.lists(st.fixed_dictionaries({}, optional={"required": st.just(["a"])})),
    },
)
entries = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        "description": st.text(max_size=30),
        "inputSchema": input_schemas,
    },
    optional={
        "title": st.text(min_size=1, max_size=10),
        "annotations": st.just({"readOnlyHint": True}),
        "outputSchema": st.just({"type": "object", "properties": {"n": {"type": "number"}}}),
        "_meta": st.just({"anthropic/alwaysLoad": True}),
    },
)


@given(entries, st.sampled_from(RECORDED))
def test_a_model_definition_is_name_description_and_input_schema_only(
    entry: dict[str, Any], client: str
) -> None:
    text = Budget(get_tokenizer(), client=client).text(entry)
    sent = json.loads(text)
    inner = sent.get("function", sent)
    assert entry["name"] in inner["name"]
    assert inner["description"].endswith(entry["description"])
    for dropped in ("title", "outputSchema", "annotations", "_meta", "inputSchema"):
        assert dropped not in inner
    assert set(model_parts(entry, client)) == {"name", "description", "inputSchema"}


@given(entries)
def test_the_wire_format_is_the_entry_as_sent(entry: dict[str, Any]) -> None:
    from agent_presets.lib.toolwire import entry_text

    assert Budget(get_tokenizer(), client="wire").text(entry) == entry_text(entry)
    assert set(CLIENTS) == {*RECORDED, "wire"}
