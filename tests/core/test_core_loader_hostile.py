"""Hostile preset files: each attack gets a located, short problem, never an exception or a hang.

A preset file comes from whoever wrote a plugin. Each test here is one attack
measured against the loader before it was hardened (issue 11): a complex key
raised TypeError, a FIFO hung, /dev/zero read until MemoryError, a 10 MB file
was parsed before being refused (blaming aliases), a long value was echoed
whole.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from agent_presets import PresetValidationError, ToolAdapter, bootstrap, hookimpl, load_preset_file
from agent_presets.cli import main
from agent_presets.lib.catalog import check_preset_files
from agent_presets.lib.loader import (
    MAX_FILE_SIZE,
    MAX_PROBLEMS,
    MAX_VALUES,
    load_preset_text,
    parse_presets,
)

from .conftest import SCENE, build_adapter

GOOD = (
    "presets:\n"
    "  - {name: good-tools, default_state: auto, risk: normal, contexts: [{surface: any}],"
    " tool_ids: [good.tool]}\n"
)
SHORT = 400
"""No message about one value is longer than this, whatever the value."""


@pytest.fixture(autouse=True)
def _default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRESETS_MAX_FILE_SIZE", raising=False)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def only_problem(text: str) -> PresetValidationError:
    presets, problems = parse_presets(text, "h.yaml")
    assert presets == []
    assert len(problems) >= 1, "a hostile file must be a problem"
    assert all(p.line is not None and p.column is not None for p in problems)
    return problems[0]


# ------------------------------------------------------------------ keys


@pytest.mark.parametrize(
    ("text", "where", "kind"),
    [
        ("? [a]\n: 1\n", "h.yaml:1:3", "a list"),
        ("presets:\n  - ? [a, b]\n    : 1\n", "h.yaml:2:7", "a list"),
        ("presets:\n  - {? {a: 1}: 2}\n", "h.yaml:2:8", "a mapping"),
        ("presets:\n  - {[a]: 1, [a]: 2}\n", "h.yaml:2:6", "a list"),
        ("base: &b {? [a]: 1}\npresets:\n  - <<: *b\n", "h.yaml:1:13", "a list"),
    ],
    ids=["top-level", "block", "mapping-key", "twice", "through-a-merge"],
)
def test_a_complex_mapping_key_is_a_located_problem_not_a_type_error(
    text: str, where: str, kind: str
) -> None:
    problem = only_problem(text)
    assert str(problem) == (
        f"{where}: a mapping key must be a field name, not {kind}; "
        "complex keys ('? ') are not allowed in a preset file"
    )


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("1", "the key 1 is read as a number"),
        ("2.5", "the key 2.5 is read as a number"),
        ("true", "the key true is read as a boolean"),
        ("~", "an empty key is read as null"),
        ("null", "the key null is read as null"),
    ],
)
def test_a_key_that_is_not_a_string_is_a_located_problem(key: str, what: str) -> None:
    # jsonschema checks only string property names, so these used to load as patterns.
    problem = only_problem(
        "presets:\n"
        f"  - {{name: a, default_state: off, risk: normal, contexts: [{{{key}: x}}],"
        " tool_ids: [a.b]}\n"
    )
    assert (problem.line, problem.column) == (2, 61)
    assert problem.message.startswith(what + ", not a field name")


# ------------------------------------------------------------------ tags


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!!timestamp 2001-12-14", "!!timestamp"),
        ("!!omap [a: 1]", "!!omap"),
        ("!!pairs [a: 1]", "!!pairs"),
        ("!custom [a]", "!custom"),
        ("!!python/name:os.system ''", "!!python/name:os.system"),
        ("!<tag:example.com,2026:x> a", "tag:example.com,2026:x"),
    ],
)
def test_a_tag_outside_json_is_a_located_problem(value: str, tag: str) -> None:
    problem = only_problem(f"presets: {value}\n")
    assert str(problem) == (
        f"h.yaml:1:10: YAML syntax error: the tag {tag} is not allowed in a preset file; "
        "write plain strings, numbers, booleans, lists and mappings"
    )


def test_a_tagged_key_is_a_located_problem() -> None:
    problem = only_problem("presets:\n  - {!!binary aGk=: 1}\n")
    assert (problem.line, problem.column) == (2, 6)
    assert "the tag !!binary is not allowed" in problem.message


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("!!int abc", "an integer (!!int)"),
        ("!!float abc", "a number (!!float)"),
        ("!!bool maybe", "a boolean (!!bool)"),
        ("!!int " + "9" * 5000, "an integer (!!int)"),
    ],
    ids=["int", "float", "bool", "int-too-long"],
)
def test_an_explicit_tag_that_cannot_read_its_value_is_a_located_problem(
    value: str, kind: str
) -> None:
    problem = only_problem(f"presets: [{value}]\n")
    assert (problem.line, problem.column) == (1, 11)
    assert f"cannot be read as {kind}" in problem.message
    assert len(str(problem)) < SHORT


def test_an_unquoted_date_is_a_string_as_in_json() -> None:
    [preset] = load_preset_text(
        "presets:\n"
        "  - {name: dated, default_state: auto, risk: normal,"
        " contexts: [{since: 2001-12-14}], tool_ids: [a.b]}\n"
    )
    assert preset.contexts[0]["since"] == "2001-12-14"


# ------------------------------------------------------------------ characters and bytes


@pytest.mark.parametrize(
    ("char", "name"),
    [("\x00", "U+0000 (NUL)"), ("\x07", "U+0007"), ("\ud800", "an unpaired surrogate U+D800")],
    ids=["nul", "bell", "surrogate"],
)
def test_a_character_yaml_forbids_is_a_located_problem(char: str, name: str) -> None:
    problem = only_problem(f"presets:\n  - [ok, x{char}]\n")
    assert (problem.line, problem.column) == (2, 11)
    assert problem.message.startswith(f"the file holds {name}")


def test_the_characters_refused_are_exactly_those_pyyaml_refuses() -> None:
    """The loader spells the set as what is refused (it compiles faster): the same set."""
    import yaml.reader

    from agent_presets.lib.loader import _NON_PRINTABLE

    theirs = yaml.reader.Reader.NON_PRINTABLE
    points = [*range(0x10000), 0x10000, 0x10001, 0x1F600, 0x10FFFE, 0x10FFFF]
    differ = [p for p in points if bool(_NON_PRINTABLE.match(chr(p))) != bool(theirs.match(chr(p)))]
    assert differ == []


def test_a_utf16_file_says_so_at_its_first_byte(in_tmp: Path) -> None:
    (in_tmp / "wide.yaml").write_bytes("presets: []\n".encode("utf-16"))
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("wide.yaml")
    assert str(info.value) == (
        "wide.yaml:1:1: cannot read preset file: it is not UTF-8 text (it starts with a UTF-16 "
        "byte order mark) (byte 0xff); save it as UTF-8"
    )


def test_a_tab_that_cannot_start_a_token_is_named() -> None:
    problem = only_problem("presets:\n\t- a\n")
    assert str(problem) == (
        "h.yaml:2:1: YAML syntax error: found character that cannot start any token "
        "(a tab: YAML indents with spaces)"
    )


# ------------------------------------------------------------------ what is read


def call_with_timeout(fn: Any, seconds: float = 10.0) -> Any:
    """``fn()``'s result or exception; fails the test if it is still running after ``seconds``."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed to the test
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    return outcome[0] if outcome else TimeoutError(f"still running after {seconds}s")


def test_a_fifo_is_refused_at_once_not_read(in_tmp: Path) -> None:
    fifo = in_tmp / "fifo.yaml"
    os.mkfifo(fifo)
    try:
        outcome = call_with_timeout(lambda: load_preset_file(fifo))
    finally:
        # A reader blocked in open() or read() gets EOF and its thread ends; with no
        # reader (nothing was blocked) this open fails, and that is fine.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert isinstance(outcome, PresetValidationError), outcome
    assert str(outcome) == (
        "fifo.yaml: not a regular file (a FIFO); a preset file must be a regular YAML file"
    )


def test_a_symlink_to_dev_zero_is_refused_without_reading(in_tmp: Path) -> None:
    (in_tmp / "zero.yaml").symlink_to("/dev/zero")
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("zero.yaml")
    assert str(info.value) == (
        "zero.yaml: not a regular file (a character device); "
        "a preset file must be a regular YAML file"
    )


def test_a_symlink_to_a_regular_file_is_read(in_tmp: Path) -> None:
    (in_tmp / "real.yaml").write_text(GOOD, encoding="utf-8")
    (in_tmp / "link.yaml").symlink_to("real.yaml")
    assert [p.name for p in load_preset_file("link.yaml")] == ["good-tools"]


def test_a_directory_is_refused(in_tmp: Path) -> None:
    (in_tmp / "folder.yaml").mkdir()
    with pytest.raises(PresetValidationError, match=r"not a regular file \(a directory\)"):
        load_preset_file("folder.yaml")


def test_a_symlink_loop_is_a_problem_not_a_runtime_error(in_tmp: Path) -> None:
    (in_tmp / "one.yaml").symlink_to("two.yaml")
    (in_tmp / "two.yaml").symlink_to("one.yaml")
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("one.yaml")
    assert str(info.value) == "one.yaml: cannot read preset file: too many levels of symbolic links"


def test_a_path_with_a_nul_byte_is_a_problem_not_a_value_error(in_tmp: Path) -> None:
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("bad\0name.yaml")
    assert str(info.value) == "bad\x00name.yaml: cannot read preset file: embedded null byte"


class _Endless(io.RawIOBase):
    """A stream of zero bytes with no end, like /dev/zero behind a Traversable."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.served > 8 * MAX_FILE_SIZE:  # a loader that reads on is failing this test
            raise AssertionError("read far past the size limit")
        view = memoryview(buffer)
        view[:] = b"\0" * len(view)
        self.served += len(view)
        return len(view)


class _EndlessResource:
    """A Traversable that is no file on disk, such as a resource inside a zip."""

    def __init__(self) -> None:
        self.stream = _Endless()

    def __str__(self) -> str:
        return "plugin.zip/presets.yaml"

    def is_dir(self) -> bool:
        return False

    def is_file(self) -> bool:
        return True

    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        raw = self.stream
        return io.BufferedReader(raw) if "b" in mode else io.TextIOWrapper(io.BufferedReader(raw))

    def read_text(self, encoding: str | None = None) -> str:
        with self.open("r") as stream:
            text: str = stream.read()
        return text

    def read_bytes(self) -> bytes:
        with self.open("rb") as stream:
            data: bytes = stream.read()
        return data

    def iterdir(self) -> Iterator[Any]:
        return iter(())

    def joinpath(self, *child: str) -> Any:
        raise FileNotFoundError(child)

    __truediv__ = joinpath

    @property
    def name(self) -> str:
        return "presets.yaml"


def test_an_endless_resource_is_read_only_up_to_the_limit() -> None:
    resource = _EndlessResource()
    with pytest.raises(PresetValidationError) as info:
        load_preset_file(resource)  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "plugin.zip/presets.yaml: the file is larger than the limit of 1,048,576 bytes"
    )
    # A buffered reader may read ahead by one buffer, never to the end of the stream.
    assert resource.stream.served <= MAX_FILE_SIZE + 1 + io.DEFAULT_BUFFER_SIZE


# ------------------------------------------------------------------ size


def ten_megabytes(directory: Path) -> Path:
    """10 MB whose first character is a YAML syntax error: parsing it would say so."""
    path = directory / "big.yaml"
    with path.open("w", encoding="utf-8") as out:
        out.write("]\n")
        line = "# " + "x" * 1022 + "\n"
        for _ in range(10 * 1024):
            out.write(line)
    return path


def test_a_ten_megabyte_file_is_refused_before_parsing(in_tmp: Path) -> None:
    path = ten_megabytes(in_tmp)
    size = path.stat().st_size
    with pytest.raises(PresetValidationError) as info:
        load_preset_file("big.yaml")
    # Not a syntax error: the file was refused before the parser saw its first byte.
    assert str(info.value) == (
        f"big.yaml: the file is {size:,} bytes, over the limit of 1,048,576 bytes for a preset "
        "file; split it, or raise the limit (presets validate --max-file-size, "
        "or PRESETS_MAX_FILE_SIZE)"
    )


def test_the_size_limit_is_configurable(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ten_megabytes(in_tmp)
    with pytest.raises(PresetValidationError, match=r"big\.yaml:1:1: YAML syntax error"):
        load_preset_file("big.yaml", max_size=11 * 1024 * 1024)
    monkeypatch.setenv("PRESETS_MAX_FILE_SIZE", "11MiB")
    with pytest.raises(PresetValidationError, match=r"big\.yaml:1:1: YAML syntax error"):
        load_preset_file("big.yaml")
    (in_tmp / "small.yaml").write_text(GOOD, encoding="utf-8")
    [problem] = check_preset_files(["small.yaml"], max_file_size=100).problems
    assert "the file is 118 bytes, over the limit of 100 bytes" in str(problem)


def test_presets_validate_takes_a_max_file_size(in_tmp: Path) -> None:
    ten_megabytes(in_tmp)
    runner = CliRunner()
    refused = runner.invoke(main, ["validate", "big.yaml"])
    assert refused.exit_code == 1
    assert "over the limit of 1,048,576 bytes" in refused.output
    raised = runner.invoke(main, ["validate", "--max-file-size", "11MiB", "big.yaml"])
    assert raised.exit_code == 1
    assert "big.yaml:1:1: YAML syntax error" in raised.output
    bad = runner.invoke(main, ["validate", "--max-file-size", "lots", "big.yaml"])
    assert bad.exit_code == 2
    assert "'lots' is not a size" in bad.output


def test_presets_validate_reports_a_fifo_in_a_folder_instead_of_skipping_it(in_tmp: Path) -> None:
    (in_tmp / "plugin").mkdir()
    (in_tmp / "plugin" / "good.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(in_tmp / "plugin" / "pipe.yaml")
    result = call_with_timeout(lambda: CliRunner().invoke(main, ["validate", "plugin"]))
    assert not isinstance(result, BaseException), result
    assert result.exit_code == 1
    assert "plugin/pipe.yaml: not a regular file (a FIFO)" in result.output
    assert "2 file(s), 1 valid preset(s), 1 problem(s)" in result.output


@pytest.mark.slow
def test_a_file_with_too_many_values_is_not_blamed_on_aliases() -> None:
    ids = ", ".join(["a.b"] * (MAX_VALUES + 10))
    problem = only_problem(
        "presets:\n"
        f"  - {{name: a, default_state: off, risk: normal, contexts: [], tool_ids: [{ids}]}}\n"
    )
    assert "alias" not in problem.message
    assert problem.message == (
        "the document holds more than 200,000 values; split it into several files"
    )


@pytest.mark.parametrize(
    "text",
    [
        "presets:\n" + "  - {name: Bad}\n" * 5000 + GOOD.removeprefix("presets:\n"),
        "presets:\n  - {" + ", ".join(["risk: normal"] * 5000) + "}\n",
    ],
    ids=["broken-presets", "duplicate-keys"],
)
def test_a_file_of_thousands_of_problems_reports_the_first_hundred(text: str) -> None:
    presets, problems = parse_presets(text, "many.yaml")
    assert presets == []
    assert len(problems) == MAX_PROBLEMS
    assert problems[-1].message == (
        "more than 100 problems; fix these first (no preset of this file was loaded)"
    )
    assert all(p.line is not None for p in problems)


# ------------------------------------------------------------------ long values


BIG = "a" * 2_000_000


@pytest.mark.parametrize(
    "text",
    [
        f"presets:\n  - name: {BIG}\n",
        "presets:\n  - {name: a, default_state: off, risk: " + BIG + ", contexts: [],"
        " tool_ids: [a.b]}\n",
        # libyaml allows 1,024 characters in an implicit key; a '? ' key has no limit.
        "presets:\n  - {name: a, default_state: off, risk: normal, contexts: [],"
        " tool_ids: [a.b], ? " + BIG + " : 1}\n",
        "presets:\n  - {name: a, default_state: off, risk: normal, contexts: [],"
        " tool_ids: ['" + BIG + "']}\n",
        "presets:\n  - {name: a, default_state: off, risk: normal,"
        " contexts: [{surface: [" + BIG + "]}], tool_ids: [a.b]}\n",
        "presets: !" + BIG + " []\n",
        "presets:\n  - {name: a, default_state: off, risk: normal,"
        " contexts: [{? A" + BIG + " : x}], tool_ids: [a.b]}\n",
        "presets: [!!int " + "9" * 2_000_000 + "]\n",
        f"presets:\n  - {{name: a, name: b, ? {BIG} : 1, ? {BIG} : 2}}\n",
    ],
    ids=[
        "name",
        "enum",
        "unknown-field",
        "tool-id",
        "pattern-value",
        "tag",
        "field-name",
        "int",
        "duplicate-key",
    ],
)
def test_a_two_megabyte_value_is_quoted_by_a_short_prefix(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # The file is read under a raised limit, as an operator might allow.
    monkeypatch.setenv("PRESETS_MAX_FILE_SIZE", "4MiB")
    (in_tmp / "long.yaml").write_text(text, encoding="utf-8")
    catalog = check_preset_files(["long.yaml"])
    assert catalog.problems
    for problem in catalog.problems:
        assert problem.line is not None
        assert len(str(problem)) < SHORT, str(problem)[:SHORT]
    assert any("aaaaaaaaaa" in p.message or "9999999999" in p.message for p in catalog.problems)


# ------------------------------------------------------------------ one plugin, not all


class _Files:
    def __init__(self, *paths: Any) -> None:
        self.paths = list(paths)

    @hookimpl
    def presets_preset_files(self) -> list[Any]:
        return self.paths


class _GoodPlugin(_Files):
    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [build_adapter("good.tool")]


class _Exploding:
    """A Traversable whose reading raises what no loader expects."""

    def __str__(self) -> str:
        return "exploding/presets.yaml"

    def is_dir(self) -> bool:
        return False

    def is_file(self) -> bool:
        return True

    def open(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the resource loader of this plugin is broken")

    def read_text(self, encoding: str | None = None) -> str:
        raise RuntimeError("the resource loader of this plugin is broken")

    def read_bytes(self) -> bytes:
        raise RuntimeError("the resource loader of this plugin is broken")

    def iterdir(self) -> Iterator[Any]:
        return iter(())

    def joinpath(self, *child: str) -> Any:
        raise FileNotFoundError(child)

    __truediv__ = joinpath

    @property
    def name(self) -> str:
        return "presets.yaml"


def hostile_files(directory: Path) -> list[Any]:
    complex_key = directory / "complex.yaml"
    complex_key.write_text("presets:\n  - ? [a]\n    : 1\n", encoding="utf-8")
    fifo = directory / "fifo.yaml"
    os.mkfifo(fifo)
    tagged = directory / "tagged.yaml"
    tagged.write_text("presets: [!!int abc]\n", encoding="utf-8")
    return [complex_key, fifo, tagged, _Exploding()]


def test_a_hostile_file_in_one_plugin_never_stops_the_others(in_tmp: Path) -> None:
    good = in_tmp / "good.yaml"
    good.write_text(GOOD, encoding="utf-8")
    presets = call_with_timeout(
        lambda: bootstrap(
            None,
            plugins=[_Files(*hostile_files(in_tmp)), _GoodPlugin(good)],
            context=SCENE,
        )
    )
    assert not isinstance(presets, BaseException), presets
    assert [p.name for p in presets.registry.list()] == ["good-tools"]
    assert presets.tool_adapters.get("good.tool") is not None
    assert [str(p) for p in presets.problems] == [
        "complex.yaml:2:7: a mapping key must be a field name, not a list; "
        "complex keys ('? ') are not allowed in a preset file",
        "fifo.yaml: plugin '_Files': not a regular file (a FIFO); "
        "a preset file must be a regular YAML file",
        "tagged.yaml:1:11: YAML syntax error: 'abc' cannot be read as an "
        "integer (!!int); quote it if you mean the text",
        "exploding/presets.yaml: plugin '_Files': reading this preset file failed with "
        "RuntimeError: the resource loader of this plugin is broken; its presets were skipped "
        "(please report this as a bug of agent-presets)",
    ]


def test_presets_validate_reports_each_hostile_file_and_checks_the_rest(in_tmp: Path) -> None:
    (in_tmp / "good.yaml").write_text(GOOD, encoding="utf-8")
    paths = [*hostile_files(in_tmp)[:3], in_tmp / "good.yaml"]
    catalog = call_with_timeout(lambda: check_preset_files(paths))
    assert not isinstance(catalog, BaseException), catalog
    assert [p.name for p in catalog.presets] == ["good-tools"]
    assert [(p.source, p.line) for p in catalog.problems] == [
        ("complex.yaml", 2),
        ("fifo.yaml", None),
        ("tagged.yaml", 1),
    ]


def test_tens_of_thousands_of_tool_ids_are_checked_for_duplicates_in_one_pass() -> None:
    # Comparing every pair of 100,000 ids took hours; the check is linear now.
    from agent_presets.lib.schema import schema
    from agent_presets.lib.schemacheck import compile_check

    root = schema()
    check = compile_check(root, root)
    ids = [f"t.x{i}" for i in range(50_000)]
    preset = {
        "name": "big",
        "default_state": "off",
        "risk": "normal",
        "contexts": [],
        "tool_ids": ids,
    }
    assert check({"presets": [preset]})
    assert not check({"presets": [{**preset, "tool_ids": [*ids, "t.x49999"]}]})
    # JSON equality still holds: 1 and 1.0 are one value, true and 1 are two.
    unique = compile_check({}, {"uniqueItems": True})
    assert not unique([1, 1.0]) and unique([True, 1]) and unique(["1", 1])
    assert not unique([{"a": 1}, {"a": 1.0}]) and unique([[1], [True]])
