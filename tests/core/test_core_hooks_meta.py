"""Meta-tests: every hook is documented and exercised (datasette's test_plugin_hooks_have_tests)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import agent_presets
from agent_presets import hookspecs
from agent_presets.lib.plugins import HOOK_NAMES, get_plugin_manager

TESTS = Path(__file__).resolve().parent
DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
HOOK_DOCS = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def hook_specs() -> dict[str, object]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {
        name: value
        for name, value in vars(hookspecs).items()
        if inspect.isfunction(value) and hasattr(value, marker)
    }


HOOKS = sorted(hook_specs())


def test_the_hook_specs_are_the_contract_hooks():
    assert (
        sorted(
            [
                "presets_preset_files",
                "presets_tool_adapters",
                "presets_headless_runtime",
                "presets_host_defaults",
                "presets_context_fields",
                "presets_serve_options",
                "presets_upstreams",
                "presets_content_providers",
            ]
        )
        == HOOKS
    )
    assert sorted(HOOK_NAMES) == HOOKS
    assert (
        sorted(name for name in vars(get_plugin_manager().hook) if name.startswith("presets_"))
        == HOOKS
    )


def test_hookimpl_is_reexported_for_plugin_authors():
    assert agent_presets.hookimpl is hookspecs.hookimpl
    assert agent_presets.hookspec is hookspecs.hookspec


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_docstring_saying_what_it_returns_and_when_it_is_called(hook):
    doc = inspect.getdoc(hook_specs()[hook])
    assert doc, f"hook {hook} has no docstring"
    assert len(doc.split()) >= 20, f"hook {hook}'s docstring is too thin to build a plugin from"
    assert re.search(r"\b[Cc]all(ed|s)?\b", doc), f"hook {hook}'s docstring says not when it runs"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented_with_its_signature_for_plugin_authors(hook):
    text = DOCS.read_text(encoding="utf-8")
    parameters = ", ".join(inspect.signature(hook_specs()[hook]).parameters)
    assert f"### `{hook}({parameters})" in text, f"docs/plugins.md has no heading for {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_exercised_by_a_test(hook):
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.glob("test_*.py"))
    tests = re.findall(rf"^def (test_hook_{hook}\w*)\(", sources, flags=re.MULTILINE)
    assert tests, f"no test named test_hook_{hook}_... in tests/core"
    implementations = re.findall(rf"^\s+def {hook}\(", sources, flags=re.MULTILINE)
    assert implementations, f"no test plugin implements {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_heading_with_its_signature_and_an_example_in_docs_hooks(hook):
    text = HOOK_DOCS.read_text(encoding="utf-8")
    parameters = ", ".join(inspect.signature(hook_specs()[hook]).parameters)
    heading = f"## `{hook}({parameters})`"
    assert heading in text, f"docs/hooks.md has no heading for {hook}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    assert f"def {hook}(" in section, f"docs/hooks.md shows no example of {hook}"
