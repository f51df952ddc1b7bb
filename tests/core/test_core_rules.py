"""One rule in one place: the schema, Preset and the loader agree; the whole-set checker."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets import DEFAULT_NAMESPACE, Preset, PresetValidationError, ToolRegistry
from agent_presets.lib.catalog import check_preset_files, collect
from agent_presets.lib.loader import load_preset_text
from agent_presets.lib.model import DuplicatePresetError

REPO_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "preset.schema.json"

VALID: dict[str, Any] = {
    "name": "drawing-shape-tools",
    "group": "drawing",
    "default_state": "auto",
    "risk": "normal",
    "contexts": [{"surface": "canvas", "activity": "drawing"}],
    "tool_ids": ["drawing.set-tool", "drawing.insert-shape"],
    "system_prompt": "The user is drawing.",
}

# Values near the valid space: every valid spelling, and the mistakes people make.
NAMES = st.sampled_from(["drawing-tools", "a", "a1-b2", "Drawing", "", "a--b", "-a", 1, None])
STATES = st.sampled_from(["auto", "off", "on", "", None, True])
RISKS = st.sampled_from(
    ["normal", "filesystem-read", "filesystem-write", "destructive", "shell", "low", None]
)
FIELD_NAMES = st.sampled_from(
    ["surface", "activity", "canvas_visible", "world_id", "selection_kind", "Bad", "1x", ""]
)
FIELD_VALUES = st.one_of(
    st.sampled_from(["canvas", "any", "none", "yes", "", None, True, False, 0, 1.5]),
    st.lists(st.just("canvas"), max_size=1),
    st.dictionaries(st.just("is"), st.just("canvas"), max_size=1),
)
PATTERNS = st.one_of(
    st.dictionaries(FIELD_NAMES, FIELD_VALUES, max_size=3),
    st.sampled_from(["canvas", 42, None]),
)
CONTEXTS = st.one_of(
    st.lists(PATTERNS, max_size=3),
    st.sampled_from(["canvas", None, {"surface": "canvas"}]),
)
TOOL_IDS = st.one_of(
    st.lists(
        st.sampled_from(["a.b", "drawing.set-tool", "x_y.z_1", "set-tool", "A.b", "a.", 1, None]),
        max_size=3,
    ),
    st.sampled_from(["a.b", None]),
)
PROMPTS = st.one_of(st.text(alphabet="abc .", max_size=8), st.sampled_from([42, None]))

FIELD_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "name": NAMES,
    "group": NAMES,
    "default_state": STATES,
    "risk": RISKS,
    "contexts": CONTEXTS,
    "tool_ids": TOOL_IDS,
    "system_prompt": PROMPTS,
    "colour": st.just("red"),
}


@st.composite
def near_valid_presets(draw: st.DrawFn) -> dict[str, Any]:
    """A valid preset with some fields dropped, replaced or added."""
    mapping = {k: v for k, v in VALID.items() if draw(st.integers(0, 9)) > 0}
    for key in draw(st.lists(st.sampled_from(sorted(FIELD_STRATEGIES)), max_size=3)):
        mapping[key] = draw(FIELD_STRATEGIES[key])
    return mapping


def _schema_accepts(mapping: dict[str, Any]) -> bool:
    """The published schema file read directly, without going through agent_presets."""
    published = json.loads(REPO_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(
        {"$defs": published["$defs"], "$ref": "#/$defs/preset"}
    )
    return bool(validator.is_valid(mapping))


def _from_dict(mapping: dict[str, Any]) -> Preset | None:
    try:
        return Preset.from_dict(mapping)
    except PresetValidationError:
        return None


def _loaded(mapping: dict[str, Any]) -> Preset | None:
    text = yaml.safe_dump({"presets": [mapping]}, sort_keys=False)
    try:
        [preset] = load_preset_text(text, "p.yaml")
    except PresetValidationError:
        return None
    return preset


def _constructed(mapping: dict[str, Any]) -> Preset | None:
    try:
        return Preset(**mapping)
    except (PresetValidationError, TypeError):
        return None


PRESET_FIELDS = {f.name for f in fields(Preset)}


@settings(max_examples=examples(300), deadline=None)
@given(near_valid_presets())
@example(VALID)
@example({**VALID, "contexts": [], "default_state": "auto"})
@example({**VALID, "contexts": [], "default_state": "off"})
@example({**VALID, "risk": "shell"})
@example({**VALID, "risk": "shell", "default_state": "off"})
@example({**VALID, "contexts": [{"surface": 1}]})
@example({**VALID, "tool_ids": ["a.b", "a.b"]})
@example({**VALID, "group": None})
def test_schema_preset_and_loader_accept_exactly_the_same_mappings(
    mapping: dict[str, Any],
) -> None:
    accepted = _schema_accepts(mapping)
    by_dict = _from_dict(mapping)
    by_loader = _loaded(mapping)
    assert (by_dict is not None) == accepted
    assert (by_loader is not None) == accepted
    assert by_dict == by_loader
    # The dataclass spells an absent optional field None, so a mapping that
    # says null for one has no keyword form; every other mapping has one.
    if set(mapping) <= PRESET_FIELDS and None not in (
        mapping.get("group", ""),
        mapping.get("system_prompt", ""),
    ):
        constructed = _constructed(mapping)
        assert (constructed is not None) == accepted
        assert constructed == by_dict


@pytest.mark.parametrize(
    ("mapping", "words"),
    [
        ({**VALID, "contexts": []}, "could never activate"),
        ({**VALID, "risk": "destructive"}, "must use default_state: off"),
        ({**VALID, "contexts": [{"surface": [1]}]}, "a context field must be a string, number"),
    ],
)
def test_preset_and_from_dict_word_a_broken_rule_the_same_way(
    mapping: dict[str, Any], words: str
) -> None:
    with pytest.raises(PresetValidationError) as by_dict:
        Preset.from_dict(mapping)
    with pytest.raises(PresetValidationError) as constructed:
        Preset(**mapping)
    assert words in by_dict.value.message
    assert by_dict.value.message == constructed.value.message


# ------------------------------------------------------------------ the whole-set checker

GOOD = """\
presets:
  - name: my-tools
    default_state: auto
    risk: normal
    contexts: [{surface: canvas}]
    tool_ids: [my.tool]
"""


def test_check_preset_files_names_both_files_of_a_duplicate(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    second = tmp_path / "b.yaml"
    first.write_text(GOOD, encoding="utf-8")
    second.write_text(GOOD, encoding="utf-8")
    catalog = check_preset_files([first, second])
    [problem] = catalog.problems
    assert isinstance(problem, DuplicatePresetError)
    assert "preset 'my-tools' is defined twice" in problem.message
    assert str(first) in problem.message or "a.yaml" in problem.message
    assert problem.source is not None and problem.source.endswith("b.yaml")
    assert [p.name for p in catalog.presets] == ["my-tools"]
    assert catalog.presets[0].source is not None and catalog.presets[0].source.endswith("a.yaml")
    assert len(catalog.files) == 2


def test_check_preset_files_reports_every_file_problem_and_keeps_the_good_presets(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD, encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("normal", "shell"), encoding="utf-8")
    missing = tmp_path / "missing.yaml"
    catalog = check_preset_files([good, bad, missing])
    messages = [str(p) for p in catalog.problems]
    assert len(messages) == 2
    assert "bad.yaml:3:20: preset 'my-tools' has risk 'shell'" in messages[0]
    assert "missing.yaml: cannot read preset file" in messages[1]
    assert [p.name for p in catalog.presets] == ["my-tools"]


def test_the_loader_the_catalog_and_the_registry_word_a_duplicate_alike(
    tmp_path: Path,
) -> None:
    from agent_presets import PresetRegistry

    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(GOOD, encoding="utf-8")
    b.write_text(GOOD, encoding="utf-8")
    [from_files] = check_preset_files([a, b]).problems
    registry = PresetRegistry()
    [first] = load_preset_text(GOOD, "a.yaml")
    [second] = load_preset_text(GOOD, "b.yaml")
    registry.register(first)
    with pytest.raises(DuplicatePresetError) as from_registry:
        registry.register(second)
    assert from_registry.value.message == (
        "preset 'my-tools' is defined twice: in a.yaml and in b.yaml; rename one of them"
    )
    assert from_files.message.replace(str(tmp_path) + "/", "") == from_registry.value.message


# ------------------------------------------------------------------ shared pieces


def test_the_default_namespace_is_the_tool_registry_and_catalog_default() -> None:
    from agent_presets.lib.plugins import load_plugins

    assert DEFAULT_NAMESPACE == ""  # a host that supplies none: the plugins' names as given
    assert ToolRegistry().namespace_prefix == DEFAULT_NAMESPACE
    assert collect(load_plugins([])).namespace_prefix == DEFAULT_NAMESPACE


# ------------------------------------------------------------------ the import graph


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {line.split(".")[0] for line in out.split()}


def test_importing_the_package_imports_neither_jsonschema_nor_mcp() -> None:
    loaded = _modules_after("import agent_presets")
    assert "jsonschema" not in loaded
    assert "mcp" not in loaded
    # The names load on first use, so the import costs almost nothing.
    assert {"pluggy", "yaml", "click"}.isdisjoint(loaded)
    assert "pluggy" in _modules_after("from agent_presets import hookimpl")


@pytest.mark.parametrize(
    "module", ["model", "schema", "loader", "registry", "matching", "tools", "plugins"]
)
def test_the_rule_modules_import_jsonschema_only_when_a_mapping_is_validated(
    module: str,
) -> None:
    assert "jsonschema" not in _modules_after(f"import agent_presets.lib.{module}")


def test_a_valid_preset_is_built_without_jsonschema_and_a_broken_one_is_described_by_it() -> None:
    build = "Preset(name='p', default_state='off', risk='normal', contexts=(), tool_ids=('a.b',))"
    code = f"from agent_presets.lib.model import Preset\n{build}"
    assert "jsonschema" not in _modules_after(code)
    broken = build.replace("'a.b'", "'ab'")
    code = (
        f"from agent_presets.lib.model import Preset\ntry:\n    {broken}\nexcept ValueError:\n"
        "    pass"
    )
    assert "jsonschema" in _modules_after(code)


JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.floats(allow_nan=False) | st.text("ab-_.1"),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["presets", "name", "risk", "contexts", "tool_ids", "surface", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(JSON_LIKE, near_valid_presets(), near_valid_presets().map(lambda p: {"presets": [p]}))
)
def test_the_fast_check_accepts_only_what_jsonschema_accepts(value: Any) -> None:
    from agent_presets.lib.schemacheck import compile_check

    published = json.loads(REPO_SCHEMA.read_text(encoding="utf-8"))
    file_validator = jsonschema.Draft202012Validator(published)
    preset_schema = {"$defs": published["$defs"], "$ref": "#/$defs/preset"}
    preset_validator = jsonschema.Draft202012Validator(preset_schema)
    assert compile_check(published, published)(value) == file_validator.is_valid(value)
    preset_check = compile_check(published, published["$defs"]["preset"])
    assert preset_check(value) == preset_validator.is_valid(value)


def test_the_fast_check_leaves_a_keyword_it_does_not_know_to_jsonschema() -> None:
    from agent_presets.lib.schemacheck import compile_check

    schema_ = {"type": "integer", "multipleOf": 2}
    assert compile_check(schema_, schema_)(4) is False  # not certain, though valid
    assert compile_check({}, {"type": "string"})("a") is True


def test_one_listener_list_serves_every_notifier() -> None:
    from agent_presets.lib.listeners import Listeners

    heard: list[tuple[Any, ...]] = []

    def listener(*args: Any) -> None:
        heard.append(args)

    listeners: Listeners[Any] = Listeners()
    listeners.add(listener)
    listeners.remove(print)  # never added: not an error
    listeners.notify(1, 2)
    listeners.remove(listener)
    listeners.notify(3)
    assert heard == [(1, 2)]
    assert len(listeners) == 0


def test_a_sync_report_is_the_tool_registry_change_type() -> None:
    from agent_presets import SyncReport
    from agent_presets.lib.tools import ToolRegistryChange

    report = SyncReport(("a",), (), ("b",))
    assert isinstance(report, ToolRegistryChange)
    assert report.changed and bool(report)
    assert not SyncReport().changed
    assert ToolRegistryChange(removed=("x",)).changed
    assert repr(report) == "SyncReport(added=('a',), removed=(), replaced=('b',))"


def test_did_you_mean_names_the_closest_name_or_says_where_to_look() -> None:
    from agent_presets.lib.suggest import did_you_mean

    assert did_you_mean("grpah", ["graph", "scene"], "see the list") == "; did you mean 'graph'?"
    assert did_you_mean("zzz", ["graph"], "see the list") == "; see the list"


def test_the_registry_s_unknown_name_message_is_public(make_preset: Any) -> None:
    from agent_presets import PresetRegistry

    registry = PresetRegistry()
    registry.register(make_preset("graph-nav-tools"))
    assert registry.unknown_message("graph-nav-tool") == (
        "no preset named 'graph-nav-tool'; did you mean 'graph-nav-tools'?"
    )


def test_a_plugin_problem_is_a_preset_validation_error() -> None:
    from agent_presets.lib.plugins import PluginProblem, load_plugins

    class Typo:
        from agent_presets import hookimpl

        @hookimpl
        def presets_preset_file(self) -> list[str]:
            return []

    [problem] = load_plugins([Typo()]).problems
    assert isinstance(problem, PluginProblem)
    assert isinstance(problem, PresetValidationError)
    assert problem.plugin == "Typo"
    assert str(problem) == problem.message


class _BrokenFile:
    from agent_presets import hookimpl

    def __init__(self, path: Path) -> None:
        self.path = path

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]


def test_bootstrap_strict_makes_definition_problems_fatal_without_the_environment(
    tmp_path: Path,
) -> None:
    from types import SimpleNamespace

    from agent_presets import bootstrap

    path = tmp_path / "p.yaml"
    path.write_text(GOOD, encoding="utf-8")  # my.tool: no adapter provides it
    with pytest.raises(PresetValidationError, match=r"my\.tool"):
        bootstrap(SimpleNamespace(), plugins=[_BrokenFile(path)], strict=True)
    presets = bootstrap(SimpleNamespace(), plugins=[_BrokenFile(path)], strict=False)
    assert any("my.tool" in str(p) for p in presets.problems)


def test_bootstrap_strict_false_overrides_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from agent_presets import bootstrap

    monkeypatch.setenv("PRESETS_STRICT", "1")
    path = tmp_path / "p.yaml"
    path.write_text(GOOD, encoding="utf-8")
    presets = bootstrap(SimpleNamespace(), plugins=[_BrokenFile(path)], strict=False)
    assert presets.registry.names() == []
    with pytest.raises(PresetValidationError, match="PRESETS_STRICT=1"):
        bootstrap(SimpleNamespace(), plugins=[_BrokenFile(path)])


CORE = Path(__file__).resolve().parents[2] / "core" / "src" / "agent_presets"


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Every agent_presets module ``path`` imports anywhere: top level, in functions, for typing."""
    import ast

    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_core_has_no_import_cycles() -> None:
    paths = {_module_name(p): p for p in CORE.rglob("*.py")}
    graph = {name: _imports(path, name, set(paths)) for name, path in paths.items()}
    assert graph["agent_presets.lib.loader"] >= {
        "agent_presets.lib.model",
        "agent_presets.lib.schema",
    }
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_model_s_values_are_the_schema_s_and_its_types_spell_them() -> None:
    from typing import get_args

    from agent_presets.lib import model

    published = json.loads(REPO_SCHEMA.read_text(encoding="utf-8"))["$defs"]
    fields_ = published["preset"]["properties"]
    assert model.RISKS == tuple(fields_["risk"]["enum"]) == get_args(model.Risk)
    assert (
        model.DEFAULT_STATES
        == tuple(fields_["default_state"]["enum"])
        == get_args(model.DefaultState)
    )
    assert {"filesystem-write", "destructive", "shell"} == model.DANGEROUS_RISKS
    assert model.TOOL_ID_RE.pattern == fields_["tool_ids"]["items"]["pattern"]
    assert model.NAME_RE.pattern == published["name"]["pattern"]
    assert model.FIELD_RE.pattern == published["pattern"]["propertyNames"]["pattern"]
