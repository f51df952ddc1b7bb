"""The namespace belongs to the host: adapters name tools without it, prompts by tool id."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_presets import (
    PresetValidationError,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolCallError,
    ToolRegistry,
    bootstrap,
    hookimpl,
    load_plugins,
)
from agent_presets.lib.catalog import collect
from agent_presets.lib.prompts import fill_placeholders, placeholders
from agent_presets_general import SpaceHost


def test_every_built_in_works_under_another_namespace(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start(tool_registry=ToolRegistry(namespace_prefix="myapp_"))
    assert presets.problems == []
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    names = presets.tool_registry.names()
    assert names, "no tools under myapp_"
    assert all(n.startswith("myapp_") for n in names)
    tool = presets.tool_registry.get("myapp_drawing_insert_shape")
    assert tool is not None
    result = tool.run({"shape": "rect", "x": 1, "y": 2, "width": 3, "height": 4})
    assert result["id"]
    prompts = "\n".join(f.prompt for f in presets.manager.get_prompt_fragments())
    assert "myapp_drawing_insert_shape" in prompts
    assert "space_" not in prompts
    assert "{{" not in prompts
    descriptions = [
        presets.tool_adapters.resolve(a.id).description for a in presets.tool_adapters.list()
    ]
    assert not any("{{" in d for d in descriptions)
    delete = presets.tool_adapters.resolve("drawing.delete-selected").description
    assert "myapp_drawing_undo" in delete


def test_a_runtime_refusal_names_the_tool_under_the_host_namespace(tmp_path: Path) -> None:
    host = SpaceHost(tmp_path / "state")
    presets = host.start(tool_registry=ToolRegistry(namespace_prefix="myapp_"))
    host.shell.set_surface("canvas")
    host.shell.set_activity("drawing")
    tool = presets.tool_registry.get("myapp_drawing_rename_layer")
    assert tool is not None
    with pytest.raises(ToolCallError, match=r"^myapp_drawing_rename_layer: "):
        tool.run({"layer": "no-such-layer", "name": "x"})


def test_the_built_in_prompts_name_tools_only_by_placeholder() -> None:
    catalog = collect(load_plugins())
    assert catalog.problems == []
    prompts = [p.system_prompt or "" for p in catalog.presets]
    assert not any("space_" in p for p in prompts)
    assert sum(len(placeholders(p)) for p in prompts) >= 48


def adapter(tool_id: str, **naming: str) -> ToolAdapter:
    return ToolAdapter.for_runtime(
        tool_id,
        "notes",
        lambda notes, args: notes,
        description="A tool.",
        input_schema={"type": "object"},
        **naming,
    )


def test_the_registry_prefixes_its_namespace_to_a_name() -> None:
    registry = ToolAdapterRegistry(SimpleNamespace(notes="n"), namespace_prefix="myapp_")
    registry.register(adapter("notes.read", name="notes_read"))
    assert registry.mcp_name_of("notes.read") == "myapp_notes_read"
    assert registry.resolve("notes.read").name == "myapp_notes_read"
    assert registry.find("myapp_notes_read") is registry.get("notes.read")


def test_a_legacy_mcp_name_works_while_it_carries_the_current_prefix() -> None:
    registry = ToolAdapterRegistry(SimpleNamespace(notes="n"))  # space_
    registry.register(adapter("notes.read", mcp_name="space_notes_read"))
    assert registry.resolve("notes.read").name == "space_notes_read"
    other = ToolAdapterRegistry(namespace_prefix="myapp_")
    with pytest.raises(PresetValidationError, match="must start with 'myapp_'"):
        other.register(adapter("notes.read", mcp_name="space_notes_read"))


def test_an_adapter_gives_at_most_one_of_name_and_mcp_name() -> None:
    with pytest.raises(PresetValidationError, match="name="):
        adapter("notes.read", name="notes_read", mcp_name="space_notes_read")


def test_a_name_must_be_snake_case() -> None:
    with pytest.raises(PresetValidationError, match="without the namespace prefix"):
        adapter("notes.read", name="Notes-Read")


def test_fill_placeholders_uses_the_names_it_is_given_and_keeps_unknown_ones() -> None:
    names = {"notes.read": "myapp_notes_read"}
    text = "Call {{notes.read}} or {{ notes.read }}; not {{nope.tool}}."
    assert fill_placeholders(text, names.get) == (
        "Call myapp_notes_read or myapp_notes_read; not {{nope.tool}}."
    )
    assert placeholders(text) == ["notes.read", "nope.tool"]


class Notes:
    def __init__(self, path: Path, prompt: str) -> None:
        path.write_text(
            "presets:\n"
            "  - name: notes-tools\n"
            "    default_state: auto\n"
            "    risk: normal\n"
            "    contexts: [{surface: any}]\n"
            "    tool_ids: [notes.read]\n"
            f"    system_prompt: {prompt}\n",
            encoding="utf-8",
        )
        self.path = path

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [adapter("notes.read", name="notes_read")]


def test_a_prompt_fragment_names_tools_under_the_registry_namespace(tmp_path: Path) -> None:
    plugin = Notes(tmp_path / "p.yaml", "Read notes with {{notes.read}}.")
    presets: Any = bootstrap(
        SimpleNamespace(notes="n"),
        plugins=[plugin],
        tool_registry=ToolRegistry("myapp_"),
        context={"surface": "scene"},
    )
    [fragment] = presets.manager.get_prompt_fragments()
    assert fragment.prompt == "Read notes with myapp_notes_read."
    assert presets.tool_registry.names() == ["myapp_notes_read"]


def test_an_unknown_placeholder_is_a_validation_problem(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    catalog = collect(load_plugins([Notes(path, "Read notes with {{notes.raed}}.")]))
    [problem] = catalog.problems
    assert str(problem).startswith(f"{path}:7:20: preset 'notes-tools': ")
    assert "{{notes.raed}}" in str(problem)
    assert catalog.presets == []
