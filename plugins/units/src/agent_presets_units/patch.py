"""A strict unified-diff applier for one file.

Strict means: every context and removed line must equal the file's line
exactly (no fuzz, no whitespace leniency), hunk line counts must agree with
their headers, and the patch applies whole or not at all. The only leniency
is position: a hunk whose lines do not match at the line its header names is
applied where they match *uniquely* elsewhere (reported as an offset), as
``patch --fuzz=0`` does; two candidate places are refused as ambiguous.

An empty line inside a hunk is read as an empty context line, because editors
and models strip the single space that a diff puts there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

HUNK_RE: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
NO_NEWLINE: Final = "\\"
FILE_HEADERS: Final = ("--- ", "+++ ", "diff ", "index ", "Index: ")


class PatchError(ValueError):
    """The patch is malformed or does not apply; nothing was changed."""


@dataclass
class Hunk:
    number: int
    header: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    # (op, text) with op one of ' ', '-', '+'; text includes its line ending.
    lines: list[tuple[str, str]] = field(default_factory=list)

    @property
    def old_lines(self) -> list[str]:
        return [text for op, text in self.lines if op in " -"]

    @property
    def new_lines(self) -> list[str]:
        return [text for op, text in self.lines if op in " +"]

    def label(self) -> str:
        return f"hunk {self.number} ({self.header.split(' @@')[0]} @@)"


@dataclass(frozen=True)
class AppliedHunk:
    number: int
    line: int  # 1-based line of the original file where the hunk applied
    offset: int  # lines away from where its header said


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept; only ``\\n`` separates lines (a ``\\r`` stays in the line)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def parse_patch(patch: str) -> list[Hunk]:
    """The hunks of a unified diff of one file, each checked against its header's counts."""
    lines = split_lines(patch)
    hunks: list[Hunk] = []
    i = 0
    # Anything before the first hunk is preamble: git headers, ---/+++ names, prose.
    while i < len(lines) and not lines[i].startswith("@@"):
        i += 1
    while i < len(lines):
        raw = lines[i].rstrip("\n")
        if not raw.strip():
            i += 1
            continue
        if raw.startswith(FILE_HEADERS):
            raise PatchError(
                f"patch line {i + 1}: a second file header {raw[:60]!r}; a unit patch must "
                "change exactly one file"
            )
        match = HUNK_RE.match(raw.rstrip("\r"))
        if match is None:
            raise PatchError(
                f"patch line {i + 1}: expected a hunk header like '@@ -3,4 +3,5 @@', "
                f"got {raw[:60]!r}"
            )
        old_start, old_count, new_start, new_count = (
            int(match.group(1)),
            1 if match.group(2) is None else int(match.group(2)),
            int(match.group(3)),
            1 if match.group(4) is None else int(match.group(4)),
        )
        hunk = Hunk(len(hunks) + 1, raw, old_start, old_count, new_start, new_count)
        if old_count > 0 and old_start == 0:
            raise PatchError(f"{hunk.label()}: old start line 0 is only valid with a count of 0")
        i = _read_hunk_body(lines, i + 1, hunk)
        if hunks and _old_index(hunk) < _old_index(hunks[-1]) + hunks[-1].old_count:
            raise PatchError(
                f"{hunk.label()} overlaps or precedes hunk {hunks[-1].number}; hunks must be "
                "in file order"
            )
        hunks.append(hunk)
    if not hunks:
        raise PatchError(
            "the patch has no hunks; give a unified diff with '@@ -a,b +c,d @@' hunk headers"
        )
    return hunks


def _read_hunk_body(lines: list[str], i: int, hunk: Hunk) -> int:
    old_left, new_left = hunk.old_count, hunk.new_count
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise PatchError(
                f"{hunk.label()} ends early: it still needs {old_left} old and {new_left} new "
                "line(s); fix the counts in its header"
            )
        line = lines[i]
        op = line[0] if line not in ("\n", "") else " "
        text = line[1:] if line not in ("\n", "") else "\n"
        if op == NO_NEWLINE:
            _drop_newline(hunk, i)
        elif op == " " and old_left > 0 and new_left > 0:
            old_left -= 1
            new_left -= 1
        elif op == "-" and old_left > 0:
            old_left -= 1
        elif op == "+" and new_left > 0:
            new_left -= 1
        else:
            raise PatchError(
                f"{hunk.label()}, patch line {i + 1}: {line.rstrip()[:60]!r} does not fit the "
                f"hunk (it still needs {old_left} old and {new_left} new line(s)); every line "
                "must start with ' ', '-' or '+' and the header counts must match"
            )
        if op != NO_NEWLINE:
            hunk.lines.append((op, text))
        i += 1
    # A "\ No newline at end of file" marker after the hunk's last line.
    if i < len(lines) and lines[i].startswith(NO_NEWLINE):
        _drop_newline(hunk, i)
        i += 1
    return i


def _drop_newline(hunk: Hunk, i: int) -> None:
    if not hunk.lines or not hunk.lines[-1][1].endswith("\n"):
        raise PatchError(f"{hunk.label()}, patch line {i + 1}: misplaced '\\ No newline' marker")
    op, text = hunk.lines[-1]
    hunk.lines[-1] = (op, text[:-1])


def _old_index(hunk: Hunk) -> int:
    """0-based index of the hunk's first old line (for pure insertions: where to insert)."""
    return hunk.old_start if hunk.old_count == 0 else hunk.old_start - 1


def apply_patch(original: str, patch: str) -> tuple[str, list[AppliedHunk]]:
    """The patched text and where each hunk applied, or ``PatchError`` (all or nothing)."""
    hunks = parse_patch(patch)
    source = split_lines(original)
    positions: list[int] = []
    floor = 0
    for hunk in hunks:
        at = _locate(source, hunk, floor)
        positions.append(at)
        floor = at + len(hunk.old_lines)
    result: list[str] = []
    applied: list[AppliedHunk] = []
    cursor = 0
    for hunk, at in zip(hunks, positions, strict=True):
        result.extend(source[cursor:at])
        result.extend(hunk.new_lines)
        cursor = at + len(hunk.old_lines)
        applied.append(AppliedHunk(hunk.number, at + 1, at - _old_index(hunk)))
    result.extend(source[cursor:])
    for line in result[:-1]:
        if not line.endswith("\n"):
            raise PatchError(
                "the patch leaves a line without a newline in the middle of the file; "
                "check its '\\ No newline at end of file' markers"
            )
    return "".join(result), applied


def _locate(source: list[str], hunk: Hunk, floor: int) -> int:
    old = hunk.old_lines
    want = _old_index(hunk)
    if _matches(source, old, want) and want >= floor:
        return want
    if not old:
        raise PatchError(
            f"{hunk.label()} inserts after line {hunk.old_start}, but the unit has only "
            f"{len(source)} line(s); nothing was changed"
        )
    found = [at for at in range(floor, len(source) - len(old) + 1) if _matches(source, old, at)]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        lines = ", ".join(str(at + 1) for at in found[:5])
        raise PatchError(
            f"{hunk.label()} does not match at line {hunk.old_start} and its lines match at "
            f"several other places (lines {lines}); add context lines to make it unique; "
            "nothing was changed"
        )
    raise PatchError(
        f"{hunk.label()} does not apply: {_first_mismatch(source, old, want)}; "
        "nothing was changed. Inspect the unit's current source and rebuild the patch"
    )


def _matches(source: list[str], old: list[str], at: int) -> bool:
    return at >= 0 and at + len(old) <= len(source) and source[at : at + len(old)] == old


def _first_mismatch(source: list[str], old: list[str], at: int) -> str:
    for k, expected in enumerate(old):
        index = at + k
        if index >= len(source) or index < 0:
            return (
                f"it expects line {index + 1} to be {expected.rstrip(chr(10))!r}, but the unit "
                f"has only {len(source)} line(s)"
            )
        if source[index] != expected:
            return (
                f"line {index + 1} is {source[index].rstrip(chr(10))!r} but the patch expects "
                f"{expected.rstrip(chr(10))!r}"
                + (
                    " (they differ only in the final newline)"
                    if source[index].rstrip("\n") == expected.rstrip("\n")
                    else ""
                )
            )
    return "its lines are not found in the unit"  # pragma: no cover - _matches was False
