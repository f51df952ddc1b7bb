"""Property-based tests of the invariants: determinism, off stays off, sync mirrors the manager."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets import (
    Preset,
    PresetManager,
    PresetMcpSync,
    PresetRegistry,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolRegistry,
)
from agent_presets.lib.model import ToolDef

PROPERTY_SETTINGS = settings(max_examples=examples(100), deadline=None)

SURFACES = ["scene", "canvas", "graph-view"]
ACTIVITIES = [None, "drawing", "graph", "notes"]
WORLDS = ["home", "lab"]
SELECTIONS = ["shape", "node"]
SAFE_RISKS = ["normal", "filesystem-read"]
ALL_RISKS = [*SAFE_RISKS, "filesystem-write", "destructive", "shell"]
STATES = ["on", "off", "auto"]

contexts = st.fixed_dictionaries(
    {
        "surface": st.sampled_from(SURFACES),
        "activity": st.sampled_from(ACTIVITIES),
        "canvas_visible": st.booleans(),
    },
    optional={
        "world_id": st.sampled_from(WORLDS),
        "selection_kind": st.sampled_from([*SELECTIONS, None]),
    },
)

patterns = st.fixed_dictionaries(
    {},
    optional={
        "surface": st.sampled_from([*SURFACES, "any"]),
        "activity": st.sampled_from(["drawing", "graph", "notes", "any", "none"]),
        "canvas_visible": st.sampled_from([True, False, "any"]),
        "world_id": st.sampled_from([*WORLDS, "any", "none"]),
        "selection_kind": st.sampled_from([*SELECTIONS, "any", "none"]),
    },
).filter(bool)


@st.composite
def preset_lists(draw: st.DrawFn, max_size: int = 7) -> list[Preset]:
    presets = []
    for i in range(draw(st.integers(0, max_size))):
        default_state = draw(st.sampled_from(["auto", "off"]))
        risk = draw(st.sampled_from(SAFE_RISKS if default_state == "auto" else ALL_RISKS))
        min_contexts = 1 if default_state == "auto" else 0
        presets.append(
            Preset(
                name=f"preset-{i}",
                default_state=default_state,
                risk=risk,
                contexts=tuple(draw(st.lists(patterns, min_size=min_contexts, max_size=3))),
                tool_ids=tuple(f"p{i}.tool-{j}" for j in range(draw(st.integers(1, 3)))),
                system_prompt=draw(st.sampled_from([None, f"Prompt of preset {i}."])),
            )
        )
    return presets


def overrides_for(names: list[str]) -> st.SearchStrategy[dict[str, str]]:
    if not names:
        return st.just({})
    return st.dictionaries(st.sampled_from(names), st.sampled_from(STATES))


def registry_of(presets: list[Preset]) -> PresetRegistry:
    registry = PresetRegistry()
    for preset in presets:
        registry.register(preset)
    return registry


def spec_matches(pattern: dict[str, Any], context: dict[str, Any]) -> bool:
    """The spec's matching rules, written out plainly as an oracle."""
    for key, wanted in pattern.items():
        if wanted == "any":
            continue
        if wanted is None or wanted == "none":
            if context.get(key) is not None:
                return False
        elif key not in context or context[key] != wanted:
            return False
    return True


# ------------------------------------------------------------------ resolution


@PROPERTY_SETTINGS
@given(data=st.data(), presets=preset_lists(), context=contexts)
def test_resolution_is_deterministic_and_independent_of_the_registry_instance(
    data, presets, context
):
    overrides = data.draw(overrides_for([p.name for p in presets]))
    registry = registry_of(presets)
    first = registry.resolve(context, overrides)
    assert registry.resolve(dict(context), dict(overrides)) == first
    assert registry_of(presets).resolve(context, overrides) == first


@PROPERTY_SETTINGS
@given(data=st.data(), presets=preset_lists(), context=contexts)
def test_resolution_agrees_with_the_spec_rules(data, presets, context):
    overrides = data.draw(overrides_for([p.name for p in presets]))
    expected = []
    for preset in presets:
        state = overrides.get(preset.name, "auto")
        if state == "on":
            expected.append((preset.name, "override"))
        elif (
            state == "auto"
            and preset.default_state == "auto"
            and any(spec_matches(dict(p), context) for p in preset.contexts)
        ):
            expected.append((preset.name, "context"))
    resolution = registry_of(presets).resolve(context, overrides)
    assert [(a.name, a.reason) for a in resolution.active_presets] == expected
    by_name = {p.name: p for p in presets}
    assert resolution.tool_ids == tuple(t for name, _ in expected for t in by_name[name].tool_ids)
    assert [f.preset for f in resolution.prompt_fragments] == [
        name for name, _ in expected if by_name[name].system_prompt
    ]


@PROPERTY_SETTINGS
@given(data=st.data(), presets=preset_lists(), context=contexts)
def test_an_off_default_never_auto_activates(data, presets, context):
    overrides = data.draw(overrides_for([p.name for p in presets]))
    resolution = registry_of(presets).resolve(context, overrides)
    active = {a.name: a.reason for a in resolution.active_presets}
    for preset in presets:
        if preset.default_state != "off":
            continue
        if overrides.get(preset.name) == "on":
            assert active[preset.name] == "override"
        else:
            assert preset.name not in active


# ------------------------------------------------------------------ sync mirrors the manager


def echo(app: Any, arguments: dict[str, Any]) -> Any:
    return arguments


def adapter(tool_id: str, mcp_name: str | None = None) -> ToolAdapter:
    name = mcp_name or "space_" + tool_id.replace(".", "_").replace("-", "_")
    return ToolAdapter(tool_id, name, f"Tool {tool_id}.", {"type": "object"}, echo)


# Two adapters share one MCP name; their presets never match the same context.
VARIANTS = [
    Preset(
        name="drawing-undo",
        default_state="auto",
        risk="normal",
        contexts=({"activity": "drawing"},),
        tool_ids=("drawing.undo",),
    ),
    Preset(
        name="graph-undo",
        default_state="auto",
        risk="normal",
        contexts=({"activity": "graph"},),
        tool_ids=("graph.undo",),
    ),
]
VARIANT_ADAPTERS = [adapter("drawing.undo", "space_undo"), adapter("graph.undo", "space_undo")]


def foreign_tool(name: str, owner: str | None) -> ToolDef:
    return ToolDef(name, "foreign", {"type": "object"}, lambda a: None, managed_owner=owner)


@st.composite
def steps(draw: st.DrawFn, names: list[str]) -> list[tuple[str, Any]]:
    step = st.tuples(st.just("context"), contexts)
    if names:
        step = step | st.tuples(
            st.just("override"), st.tuples(st.sampled_from(names), st.sampled_from(STATES))
        )
    return draw(st.lists(step, max_size=12))


@PROPERTY_SETTINGS
@given(data=st.data(), presets=preset_lists(), start=contexts)
def test_the_tool_registry_equals_the_manager_tools_plus_untouched_foreign_tools(
    data, presets, start
):
    adapters = ToolAdapterRegistry()
    for preset in presets:
        for tool_id in preset.tool_ids:
            adapters.register(adapter(tool_id))
    for variant in VARIANT_ADAPTERS:
        adapters.register(variant)
    registry = registry_of([*presets, *VARIANTS])
    tools = ToolRegistry("space_")
    foreign = [foreign_tool("space_ping", None), foreign_tool("space_other", "other-sync")]
    for tool in foreign:
        tools.register(tool)
    notifications: list[Any] = []
    tools.add_on_change(notifications.append)
    manager = PresetManager(registry, adapters, None, start)
    sync = PresetMcpSync(manager, tools, owner="agent-presets")
    sync.start()

    def snapshot() -> dict[str, str | None]:
        return {t.name: t.managed_source for t in manager.get_tool_defs()}

    def check() -> None:
        wanted = snapshot()
        assert tools.names() == sorted({*wanted, "space_ping", "space_other"})
        for name, source in wanted.items():
            held = tools.get(name)
            assert held is not None
            assert held.managed_owner == "agent-presets"
            assert held.managed_source == source
        for tool in foreign:
            assert tools.get(tool.name) is tool
        assert sync.managed() == wanted

    check()
    for kind, value in data.draw(steps([p.name for p in presets])):
        before, heard = snapshot(), len(notifications)
        if kind == "context":
            manager.set_context(value)
        else:
            manager.set_override(*value)
        check()
        # One list_changed per sync that changed the tool set, none otherwise.
        assert len(notifications) == heard + (snapshot() != before)

    sync.stop()
    assert tools.names() == ["space_other", "space_ping"]


def test_concurrent_context_and_override_changes_leave_the_registry_equal_to_the_manager():
    import random
    import threading

    presets = [
        Preset(
            name=f"preset-{i}",
            default_state="auto",
            risk="normal",
            contexts=(pattern,),
            tool_ids=(f"p{i}.a", f"p{i}.b"),
        )
        for i, pattern in enumerate(
            [
                {"surface": "scene"},
                {"activity": "drawing"},
                {"activity": "graph"},
                {"surface": "any"},
            ]
        )
    ]
    adapters = ToolAdapterRegistry()
    for preset in presets:
        for tool_id in preset.tool_ids:
            adapters.register(adapter(tool_id))
    for variant in VARIANT_ADAPTERS:
        adapters.register(variant)
    manager = PresetManager(
        registry_of([*presets, *VARIANTS]),
        adapters,
        None,
        {"surface": "scene", "canvas_visible": False},
    )
    tools = ToolRegistry("space_")
    tools.register(foreign_tool("space_ping", None))
    PresetMcpSync(manager, tools).start()
    choices = [
        {"surface": "scene", "activity": None, "canvas_visible": False},
        {"surface": "canvas", "activity": "drawing", "canvas_visible": True},
        {"surface": "canvas", "activity": "graph", "canvas_visible": True},
    ]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(150):
                if rng.random() < 0.7:
                    manager.set_context(rng.choice(choices))
                else:
                    manager.set_override(rng.choice(["preset-0", "preset-3"]), rng.choice(STATES))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    wanted = {t.name: t.managed_source for t in manager.get_tool_defs()}
    held = {n: tools.get(n).managed_source for n in tools.names() if n != "space_ping"}
    assert held == wanted
    assert "space_ping" in tools
