"""Loading preset files: YAML 1.1 booleans, positions in every message, all problems at once."""

from __future__ import annotations

import signal
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_presets import DuplicatePresetError, PresetValidationError, load_preset_file
from agent_presets.lib.loader import load_preset_text, parse_presets


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Run in tmp_path so files display with their short relative names."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(directory: Path, text: str, name: str = "presets.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(excinfo: pytest.ExceptionInfo[PresetValidationError]) -> list[str]:
    return [str(p) for p in excinfo.value.all_problems()]


# ------------------------------------------------------------------ YAML 1.1 words


def test_unquoted_off_reads_as_the_string_off(in_tmp):
    write(
        in_tmp,
        "presets:\n"
        "  - name: quiet-tools\n"
        "    default_state: off\n"
        "    risk: shell\n"
        "    contexts: [{surface: any}]\n"
        "    tool_ids: [app.bash]\n",
    )
    [preset] = load_preset_file("presets.yaml")
    assert preset.default_state == "off"
    assert preset.source == "presets.yaml"


def test_unquoted_on_off_yes_no_in_patterns_stay_strings():
    [preset] = load_preset_text(
        "presets:\n"
        "  - name: words\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        "    contexts: [{mode: on, tablet: yes, touch: no, pen: off, hint: Yes}]\n"
        "    tool_ids: [a.b]\n"
    )
    assert dict(preset.contexts[0]) == {
        "mode": "on",
        "tablet": "yes",
        "touch": "no",
        "pen": "off",
        "hint": "Yes",
    }


@pytest.mark.parametrize(("word", "value"), [("true", True), ("false", False), ("True", True)])
def test_true_and_false_are_still_booleans(word, value):
    [preset] = load_preset_text(
        "presets:\n"
        "  - name: visible\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        f"    contexts: [{{canvas_visible: {word}}}]\n"
        "    tool_ids: [a.b]\n"
    )
    assert preset.contexts[0]["canvas_visible"] is value


def test_canvas_visible_yes_is_a_string_to_the_schema_which_names_no_field(in_tmp):
    # Whether canvas_visible is a boolean is its declaration's business (the host's),
    # checked by the catalog: test_core_vocabulary.
    write(
        in_tmp,
        "presets:\n"
        "  - name: drawing-tools\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        "    contexts:\n"
        "      - surface: canvas\n"
        "        canvas_visible: yes\n"
        "    tool_ids: [drawing.undo]\n",
    )
    [preset] = load_preset_file("presets.yaml")
    assert preset.contexts[0]["canvas_visible"] == "yes"


# ------------------------------------------------------------------ positions


BAD_FILE = (
    "presets:\n"  # 1
    "  - name: drawing-tools\n"  # 2
    "    default_state: off\n"  # 3
    "    risk: normal\n"  # 4
    "    contexts:\n"  # 5
    "      - surface: canvas\n"  # 6
    "        canvas_visible: [yes]\n"  # 7
    "    tool_ids: [drawing.undo]\n"  # 8
    "  - name: shell-tools\n"  # 9
    "    default_state: auto\n"  # 10
    "    risk: shell\n"  # 11
    "    contexts: [{surface: any}]\n"  # 12
    "    tool_ids: [app.bash]\n"  # 13
    "    colour: red\n"  # 14
    "  - name: good-tools\n"  # 15
    "    default_state: auto\n"  # 16
    "    risk: normal\n"  # 17
    "    contexts: [{surface: any}]\n"  # 18
    "    tool_ids: [Bad Id]\n"  # 19
)


def test_every_problem_is_reported_as_path_line_col_naming_preset_and_field(in_tmp):
    write(in_tmp, BAD_FILE)
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("presets.yaml")
    assert problems_of(info) == [
        "presets.yaml:7:25: preset 'drawing-tools', field 'contexts[0].canvas_visible': "
        "expected string or number or boolean or null, got array ['yes']; a context field "
        "must be a string, number, boolean or null",
        "presets.yaml:10:20: preset 'shell-tools' has risk 'shell' and must use "
        "default_state: off (dangerous presets are enabled only by an explicit override)",
        "presets.yaml:14:5: preset 'shell-tools': unknown field 'colour'; allowed fields: "
        "name, group, default_state, risk, contexts, tool_ids, system_prompt, max_tokens, pin, "
        "prompts, resources",
        "presets.yaml:19:16: preset 'good-tools', field 'tool_ids[0]': tool id 'Bad Id' must "
        "be dotted, like 'drawing.set-tool'",
    ]
    # The combined error lists them all, one located line each, and points at the first.
    assert str(info.value) == "4 problems:\n" + "\n".join(problems_of(info))
    assert (info.value.source, info.value.line, info.value.column) == ("presets.yaml", 7, 25)


def test_parse_presets_keeps_the_valid_presets_beside_the_problems():
    text = BAD_FILE + (
        "  - name: fine-tools\n"
        "    default_state: auto\n"
        "    risk: normal\n"
        "    contexts: [{surface: scene}]\n"
        "    tool_ids: [fine.tool]\n"
    )
    presets, problems = parse_presets(text, "presets.yaml")
    assert [p.name for p in presets] == ["fine-tools"]
    assert [(p.line, p.column) for p in problems] == [(7, 25), (10, 20), (14, 5), (19, 16)]


def test_a_dangerous_auto_preset_is_rejected_with_a_message_saying_to_use_off():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - name: wipe-tools\n"
            "    risk: destructive\n"
            "    default_state: auto\n"
            "    contexts: [{surface: any}]\n"
            "    tool_ids: [app.wipe]\n",
            "wipe.yaml",
        )
    assert str(info.value) == (
        "wipe.yaml:4:20: preset 'wipe-tools' has risk 'destructive' and must use "
        "default_state: off (dangerous presets are enabled only by an explicit override)"
    )


def test_a_model_level_problem_points_at_its_preset():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - {name: ok, default_state: off, risk: normal, contexts: [], tool_ids: [a.b]}\n"
            "  - {name: never, default_state: auto, risk: normal, contexts: [], tool_ids: [b.b]}\n",
            "s.yaml",
        )
    assert str(info.value).startswith("s.yaml:3:5: preset 'never' is auto but lists no contexts")


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        (
            "presets:\n  - name: broken\n    risk: normal: extra\n",
            "s.yaml:3:17",
            "mapping values are not allowed",
        ),
        ("presets:\n  - name: broken\n\trisk: normal\n", "s.yaml:3:1", "tab character"),
        # Where the broken construct opens, not where the parser gave up.
        ("presets:\n  - name: [unclosed\n", "s.yaml:2:11", "expected ',' or ']'"),
    ],
)
def test_yaml_syntax_errors_are_reported_with_their_position(text, where, words):
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(text, "s.yaml")
    message = str(info.value)
    assert message.startswith(f"{where}: YAML syntax error")
    assert words in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "presets:\n  - name: x\n    contexts: [{surface: canvas}\n    tool_ids: [a.b]\n",
            "s.yaml:3:15: YAML syntax error in a flow sequence ([...]) that starts here: "
            "did not find expected ',' or ']'; the parser gave up at line 4, column 5",
        ),
        (
            'presets:\n  - name: "x\n    risk: normal\n',
            "s.yaml:2:11: YAML syntax error in a quoted string that starts here: found "
            "unexpected end of stream; the parser gave up at line 4, column 1",
        ),
    ],
)
def test_an_unclosed_construct_is_reported_where_it_opens_and_where_the_parser_gave_up(
    text: str, message: str
) -> None:
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(text, "s.yaml")
    assert str(info.value) == message


def test_yaml_tags_that_construct_python_objects_are_refused():
    with pytest.raises(PresetValidationError, match=r"s\.yaml:1:10: YAML syntax error: .*python"):
        load_preset_text("presets: !!python/object/apply:os.getcwd []\n", "s.yaml")


def test_a_second_yaml_document_is_an_error():
    with pytest.raises(PresetValidationError, match=r"s\.yaml:3:1: .*another document"):
        load_preset_text("---\npresets: []\n---\npresets: []\n", "s.yaml")


def test_duplicate_keys_are_reported_at_the_second_key():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - name: twice\n"
            "    default_state: off\n"
            "    risk: normal\n"
            "    contexts: []\n"
            "    tool_ids: [a.b]\n"
            "    risk: normal\n",
            "dup.yaml",
        )
    message = str(info.value)
    assert message.startswith("dup.yaml:7:5: ")
    assert "'risk' appears twice" in message


def test_duplicate_key_message_names_the_preset():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - {name: twice, default_state: off, risk: normal, contexts: [], tool_ids: [a.b],"
            " risk: shell}\n",
            "dup.yaml",
        )
    assert str(info.value) == (
        "dup.yaml:2:84: preset 'twice', field 'risk': key 'risk' appears twice in one mapping; "
        "keep one"
    )


def test_duplicate_context_pattern_keys_are_reported():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - name: twice\n"
            "    default_state: auto\n"
            "    risk: normal\n"
            "    contexts:\n"
            "      - surface: canvas\n"
            "        surface: scene\n"
            "    tool_ids: [a.b]\n",
            "dup.yaml",
        )
    assert str(info.value).startswith("dup.yaml:7:9: ")
    assert "'surface' appears twice" in str(info.value)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n"])
def test_an_empty_file_is_reported(text):
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(text, "empty.yaml")
    assert str(info.value) == (
        "empty.yaml:1:1: the file is empty; a preset file holds a 'presets:' list"
    )


def test_an_empty_presets_list_is_valid():
    assert load_preset_text("presets: []\n") == []


def test_an_unknown_preset_field_is_reported_at_its_key():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - name: typo\n"
            "    default_state: off\n"
            "    risk: normal\n"
            "    context: [{surface: any}]\n"
            "    tool_ids: [a.b]\n",
            "typo.yaml",
        )
    assert problems_of(info) == [
        "typo.yaml:2:5: preset 'typo': missing required field 'contexts'",
        "typo.yaml:5:5: preset 'typo': unknown field 'context'; allowed fields: "
        "name, group, default_state, risk, contexts, tool_ids, system_prompt, max_tokens, pin, "
        "prompts, resources",
    ]


def test_an_unknown_top_level_field_is_reported():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text("preset:\n  - name: a\n", "top.yaml")
    assert problems_of(info) == [
        "top.yaml:1:1: missing required field 'presets' (a preset file holds a 'presets:' list)",
        "top.yaml:1:1: unknown field 'preset'; allowed fields: presets, upstreams, prompts, "
        "resources, resource_templates",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n", "l.yaml:1:1: expected object, got array ['a']"),
        ("presets: {}\n", "l.yaml:1:10: field 'presets': expected array, got mapping {}"),
        ("presets:\n  - 42\n", "l.yaml:2:5: presets[0]: expected object, got number 42"),
    ],
)
def test_wrong_shapes_are_reported_with_position(text, expected):
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(text, "l.yaml")
    assert str(info.value) == expected


def test_a_pattern_field_name_that_is_not_snake_case_says_so():
    with pytest.raises(PresetValidationError) as info:
        load_preset_text(
            "presets:\n"
            "  - {name: a, default_state: off, risk: normal, contexts: [{Surface: x}],"
            " tool_ids: [a.b]}\n",
            "s.yaml",
        )
    assert str(info.value).startswith(
        "s.yaml:2:60: preset 'a', field 'contexts[0]': field name 'Surface' must be snake_case"
    )


def test_from_dict_names_the_preset_once():
    with pytest.raises(PresetValidationError) as info:
        from agent_presets import Preset

        Preset.from_dict(
            {
                "name": "once",
                "default_state": "auto",
                "risk": "bogus",
                "contexts": [{"surface": "any"}],
                "tool_ids": ["a.b"],
            }
        )
    assert str(info.value).count("preset 'once'") == 1


# ------------------------------------------------------------------ anchors and aliases


def test_a_yaml_merge_key_with_overrides_loads():
    presets = load_preset_text(
        "presets:\n"
        "  - &base {name: first, default_state: auto, risk: normal,"
        " contexts: [{surface: any}], tool_ids: [a.b]}\n"
        "  - <<: *base\n"
        "    name: second\n"
        "    tool_ids: [b.c]\n",
        "merge.yaml",
    )
    assert [(p.name, p.tool_ids, p.default_state) for p in presets] == [
        ("first", ("a.b",), "auto"),
        ("second", ("b.c",), "auto"),
    ]


@pytest.mark.parametrize(
    "text",
    ["presets: &a [*a]\n", "presets:\n  - &p {name: a, contexts: [*p]}\n"],
    ids=["list-in-itself", "mapping-in-itself"],
)
def test_a_recursive_alias_is_a_validation_error_not_a_crash(text):
    with pytest.raises(PresetValidationError):
        load_preset_text(text, "loop.yaml")


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"took longer than {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_nested_aliases_do_not_make_loading_exponential():
    lines = [
        "presets:",
        "  - name: laughs",
        "    default_state: off",
        "    risk: normal",
        "    contexts: []",
        "    tool_ids: [a.b]",
        "    x0: &x0 [a, a, a, a, a, a, a, a, a]",
    ]
    for level in range(1, 9):
        lines.append(f"    x{level}: &x{level} [" + ", ".join([f"*x{level - 1}"] * 9) + "]")
    text = "\n".join(lines) + "\n"
    assert len(text) < 1000
    with time_limit(2.0), pytest.raises(PresetValidationError):
        load_preset_text(text, "laughs.yaml")


def test_anchors_and_aliases_that_share_a_list_load():
    presets = load_preset_text(
        "presets:\n"
        "  - {name: first, default_state: auto, risk: normal, contexts: &everywhere"
        " [{surface: any}], tool_ids: [a.b]}\n"
        "  - {name: second, default_state: auto, risk: normal, contexts: *everywhere,"
        " tool_ids: [b.c]}\n",
        "alias.yaml",
    )
    assert [p.contexts for p in presets] == [({"surface": "any"},), ({"surface": "any"},)]


# ------------------------------------------------------------------ reading files


def test_a_missing_file_is_a_clear_error(in_tmp):
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("missing.yaml")
    assert str(info.value) == "missing.yaml: cannot read preset file: no such file or directory"


def test_a_file_that_is_not_utf8_is_a_clear_error(in_tmp):
    (in_tmp / "latin.yaml").write_bytes(b"presets: []\n# caf\xe9\n")
    with pytest.raises(PresetValidationError) as info:
        load_preset_file(Path("latin.yaml"))
    assert str(info.value) == (
        "latin.yaml:2:6: cannot read preset file: it is not UTF-8 text (byte 0xe9); "
        "save it as UTF-8"
    )


def test_a_file_outside_the_working_directory_keeps_its_path(tmp_path):
    path = write(tmp_path, "presets:\n  - 42\n")
    with pytest.raises(PresetValidationError) as info:
        load_preset_file(path)
    assert str(info.value).startswith(f"{path}:2:5: ")


def test_load_preset_file_reads_an_importlib_resources_traversable(tmp_path):
    archive = tmp_path / "plugin.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(
            "pkg/presets.yaml",
            "presets:\n"
            "  - {name: zipped, default_state: off, risk: normal, contexts: [], tool_ids: [z.t]}\n"
            "  - 7\n",
        )
    traversable = zipfile.Path(archive, "pkg/presets.yaml")
    with pytest.raises(PresetValidationError) as info:
        load_preset_file(traversable)
    assert str(info.value).startswith(f"{archive}/pkg/presets.yaml:3:5: ")

    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pkg/presets.yaml", "presets: []\n")
    assert load_preset_file(zipfile.Path(archive, "pkg/presets.yaml")) == []


def test_a_duplicate_preset_in_one_file_is_a_duplicate_preset_error():
    presets, problems = parse_presets(
        "presets:\n"
        "  - {name: twin, default_state: off, risk: normal, contexts: [], tool_ids: [a.one]}\n"
        "  - {name: other, default_state: off, risk: normal, contexts: [], tool_ids: [a.two]}\n"
        "  - {name: twin, default_state: off, risk: normal, contexts: [], tool_ids: [a.three]}\n",
        "twins.yaml",
    )
    assert [p.name for p in presets] == ["twin", "other"]
    assert presets[0].tool_ids == ("a.one",)
    [problem] = problems
    assert isinstance(problem, DuplicatePresetError)
    assert str(problem) == (
        "twins.yaml:4:12: preset 'twin' is defined twice in this file (first defined at line 2)"
    )


def test_validation_error_without_a_source_has_no_location_prefix():
    error = PresetValidationError("plain")
    assert str(error) == "plain"
    assert error.all_problems() == (error,)
    located = PresetValidationError("msg", source="f.yaml", line=3)
    assert str(located) == "f.yaml:3: msg"
