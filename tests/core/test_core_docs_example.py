"""The plugin written in docs/plugins.md works as printed: docs that run do not rot."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).parents[2] / "docs" / "plugins.md"


def blocks(language: str, section: str = "## 1. The package") -> list[str]:
    """The ``language`` code blocks of ``section`` and, for section 1, of the sections after it."""
    text = DOC.read_text(encoding="utf-8").split(section, 1)[1]
    if not section.startswith("## 1."):
        text = text.split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_plugin_on_one_screen_is_what_new_plugin_writes() -> None:
    # Its own tests, its build and its install run in tests/e2e/test_e2e_new_plugin.py.
    from agent_presets.cli.newplugin import PluginNames, render

    written = render(PluginNames.parse("notes"))
    [module] = blocks("python", "## A plugin on one screen")
    [presets] = blocks("yaml", "## A plugin on one screen")
    assert module == written["src/agent_presets_notes/__init__.py"]
    assert presets == written["src/agent_presets_notes/presets.yaml"]


def test_the_documented_plugin_loads_validates_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first five are the plugin of sections 1 to 3, then section 5's test; the other
    # hooks and later sections have examples of their own.
    files_hook, fields_hook, adapters_hook, helpers, runtime_hook = blocks("python")[:5]
    test_code = next(b for b in blocks("python") if "def test_append_adds_a_note" in b)
    package = tmp_path / "agent_presets_myplugin"
    package.mkdir()
    (package / "presets.yaml").write_text(blocks("yaml")[0], encoding="utf-8")
    (package / "__init__.py").write_text(
        "\n\n".join([files_hook, fields_hook, adapters_hook, helpers, runtime_hook]),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "agent_presets_myplugin", raising=False)

    namespace: dict[str, object] = {}
    exec(compile(test_code, str(DOC), "exec"), namespace)
    test = namespace["test_append_adds_a_note"]
    assert callable(test)
    test(tmp_path)

    from agent_presets.lib.loader import load_preset_file

    [preset] = load_preset_file(package / "presets.yaml")
    assert preset.tool_ids == ("notes.append",)

    # The helpers' example builds a working adapter too.
    import agent_presets_myplugin

    class Notes:
        def search(self, text: str) -> list[str]:
            return [n for n in ["buy milk", "call mum"] if text in n]

    from types import SimpleNamespace

    from agent_presets import ToolAdapterRegistry

    adapters = ToolAdapterRegistry(SimpleNamespace(notes=Notes()))
    adapters.register(agent_presets_myplugin.search)
    assert adapters.resolve("notes.search").run({"text": "milk"}) == ["buy milk"]
