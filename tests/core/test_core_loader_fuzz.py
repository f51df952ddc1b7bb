"""Fuzzing the loader: no preset file, however mangled, makes it raise.

The seeds are the built-in plugins' own preset files, mutated as an attacker
or a bad editor would: YAML syntax tokens (``? ``, ``!!``, ``&a``, ``*a``,
``<<:``, brackets, tabs, NULs) inserted, bytes flipped, spans deleted or
duplicated, the file truncated; and arbitrary text. The loader may only
return problems, each located (``path:line:col``) and short.

The number of examples follows the hypothesis profile (tests/conftest.py):
``FUZZ_FACTOR`` times the profile's ``max_examples`` in the full lane (the
``ci`` profile, ``.ci/run``: thousands of files), and in the quick lane the
``quick`` profile's count, as for every property (tests/lanes.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets import Preset, PresetValidationError
from agent_presets.lib.catalog import check_preset_files
from agent_presets.lib.loader import MAX_FILE_SIZE, parse_presets

ROOT: Final = Path(__file__).resolve().parents[2]
SEED_FILES: Final = sorted(ROOT.glob("plugins/*/src/*/presets.yaml"))
SEEDS: Final = [p.read_text(encoding="utf-8") for p in SEED_FILES]

FUZZ_FACTOR: Final = 10
EXAMPLES: Final = examples(settings().max_examples * FUZZ_FACTOR)
"""Examples per fuzz test: 3,000 in the ci profile, 25 in the quick one."""

MAX_MESSAGE: Final = 1000

TOKENS: Final = [
    "? ",
    "? [a]\n: 1\n",
    "? {a: 1}\n: 2\n",
    ": ",
    "- ",
    "!!",
    "!!python/object/apply:os.system ['true']",
    "!!python/name:os.system ",
    "!custom ",
    "!!binary aGk= ",
    "!!set ",
    "!!timestamp ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!str ",
    "!!map ",
    "!!seq ",
    "!!omap ",
    "!<tag:x,2026:y> ",
    "&a ",
    "*a",
    "*b",
    "&a [*a]",
    "<<: ",
    "<<: *a\n",
    "<< ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\t",
    "\x00",
    "\x07",
    "\ud800",
    "\ufeff",
    "\x85",
    "\u2028",
    "\r",
    "\n",
    "---\n",
    "...\n",
    "%YAML 1.1\n",
    "%TAG ! tag:yaml.org,2002:python/\n",
    "'",
    '"',
    '"\\x',
    "#",
    "|",
    ">-",
    "1: ",
    "~: ",
    "true: ",
    "2001-12-14",
    ".nan",
    "=",
    "9" * 5000,
    "1" + "0" * 400,  # valid YAML and JSON, past a float's range
    "-1" + "0" * 400,
    "1e400",
    "a" * 2000,
    "[" * 200,
    "{a: " * 120,
]


def line_starts(text: str) -> list[int]:
    return [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    """A built-in preset file with a few edits, each at a random place or at a line start."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(
            st.sampled_from(["insert", "insert-at-line", "delete", "duplicate", "truncate", "char"])
        )
        at = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS) | st.text(max_size=4)) + text[at:]
        elif op == "insert-at-line":
            at = draw(st.sampled_from(line_starts(text)))
            indent = " " * draw(st.sampled_from([0, 2, 4, 6]))
            text = text[:at] + indent + draw(st.sampled_from(TOKENS)) + text[at:]
        elif op == "delete":
            end = draw(st.integers(at, min(len(text), at + 60)))
            text = text[:at] + text[end:]
        elif op == "duplicate":
            end = draw(st.integers(at, min(len(text), at + 400)))
            text = text[:end] + text[at:end] + text[end:]
        elif op == "truncate":
            text = text[:at]
        else:
            text = text[:at] + draw(st.characters()) + text[at + 1 :]
    return text


@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    """A mutated file's UTF-8 bytes with a few bytes flipped or inserted."""
    data = bytearray(draw(mutated_text()).encode("utf-8", "surrogatepass"))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(data)))
        byte = draw(st.integers(0, 255))
        if at < len(data) and draw(st.booleans()):
            data[at] ^= byte or 0x80
        else:
            data[at:at] = bytes([byte])
    if draw(st.booleans()):
        data[0:0] = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"]))
    return bytes(data)


def assert_only_problems(presets: list[Preset], problems: list[PresetValidationError]) -> None:
    assert all(isinstance(p, Preset) for p in presets)
    for problem in problems:
        assert isinstance(problem, PresetValidationError)
        assert problem.source is not None
        assert problem.line is not None and problem.column is not None, str(problem)[:300]
        assert problem.line >= 1 and problem.column >= 1
        assert problem.message
        assert len(str(problem)) < MAX_MESSAGE, str(problem)[:300]


def test_the_seeds_are_the_builtin_preset_files_and_load() -> None:
    assert len(SEEDS) >= 3
    for path, text in zip(SEED_FILES, SEEDS, strict=True):
        presets, problems = parse_presets(text, str(path))
        assert presets and not problems


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_text())
def test_a_mutated_builtin_preset_file_gives_only_located_short_problems(text: str) -> None:
    assert_only_problems(*parse_presets(text, "fuzz.yaml"))


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(max_size=300)
    | st.lists(st.sampled_from([*TOKENS, "a", "b", " ", "\n", "  ", "1"]), max_size=40).map("".join)
)
def test_arbitrary_text_gives_only_located_short_problems(text: str) -> None:
    assert_only_problems(*parse_presets(text, "fuzz.yaml"))


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.slow
@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_bytes())
def test_a_mutated_file_on_disk_gives_only_located_short_problems(
    fuzz_dir: Path, data: bytes
) -> None:
    path = fuzz_dir / "presets.yaml"
    path.write_bytes(data)
    catalog = check_preset_files([path], max_file_size=MAX_FILE_SIZE)
    assert_only_problems(catalog.presets, catalog.problems)
