"""The strict unified-diff applier: all or nothing, exact lines, clear refusals."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets_units.patch import PatchError, apply_patch

BASE = "def f(x):\n    return x\n\n\ndef g(y):\n    return y * 2\n"


def make_diff(old: str, new: str, context: int = 3) -> str:
    """A unified diff as git writes it, including '\\ No newline at end of file' markers."""
    out = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        "a/unit.py",
        "b/unit.py",
        n=context,
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def test_a_good_patch_applies() -> None:
    new = BASE.replace("return y * 2", "return y * 3")
    patched, hunks = apply_patch(BASE, make_diff(BASE, new))
    assert patched == new
    assert [(h.number, h.offset) for h in hunks] == [(1, 0)]


def test_a_patch_without_file_headers_applies() -> None:
    patch = "@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n"
    patched, _ = apply_patch(BASE, patch)
    assert patched.startswith("def f(x):\n    return x + 1\n")


def test_git_headers_and_section_names_are_accepted() -> None:
    patch = (
        "diff --git a/unit.py b/unit.py\nindex 1234567..89abcde 100644\n"
        "--- a/unit.py\n+++ b/unit.py\n"
        "@@ -5,2 +5,2 @@ def f(x):\n def g(y):\n-    return y * 2\n+    return -y\n"
    )
    patched, _ = apply_patch(BASE, patch)
    assert patched.endswith("def g(y):\n    return -y\n")


def test_a_mismatched_context_line_is_refused_naming_hunk_and_line() -> None:
    patch = "@@ -5,2 +5,2 @@\n def g(z):\n-    return y * 2\n+    return y * 3\n"
    with pytest.raises(PatchError) as info:
        apply_patch(BASE, patch)
    message = str(info.value)
    assert "hunk 1 (@@ -5,2 +5,2 @@)" in message
    assert "line 5 is 'def g(y):' but the patch expects 'def g(z):'" in message


def test_whitespace_differences_are_not_forgiven() -> None:
    patch = "@@ -1,2 +1,2 @@\n def f(x):\n-  return x\n+  return 0\n"
    with pytest.raises(PatchError, match="line 2 is '    return x'"):
        apply_patch(BASE, patch)


def test_one_bad_hunk_refuses_the_whole_patch() -> None:
    new = BASE.replace("return x\n", "return x + 1\n").replace("y * 2", "y * 3")
    patch = make_diff(BASE, new, context=1)
    assert patch.count("@@ -") == 2
    broken = patch.replace(" def g(y):", " def g(q):")
    with pytest.raises(PatchError, match="hunk 2"):
        apply_patch(BASE, broken)


def test_header_counts_must_match_the_hunk() -> None:
    short = "@@ -1,3 +1,3 @@\n def f(x):\n-    return x\n+    return 1\n"
    with pytest.raises(PatchError, match=r"hunk 1 .* ends early"):
        apply_patch(BASE, short)
    extra = "@@ -1,1 +1,1 @@\n-def f(x):\n+def f(y):\n-    return x\n+    return y\n"
    with pytest.raises(PatchError, match="expected a hunk header"):
        apply_patch(BASE, extra)


def test_garbage_and_empty_patches_are_refused() -> None:
    with pytest.raises(PatchError, match="no hunks"):
        apply_patch(BASE, "please change f to return 1")
    with pytest.raises(PatchError, match="no hunks"):
        apply_patch(BASE, "--- a/unit.py\n+++ b/unit.py\n")
    with pytest.raises(PatchError, match="does not fit the hunk"):
        apply_patch(BASE, "@@ -1,2 +1,2 @@\n def f(x):\n*    return x\n+    return 1\n")


def test_patches_for_two_files_are_refused() -> None:
    one = make_diff(BASE, BASE.replace("y * 2", "y * 4"))
    with pytest.raises(PatchError, match="exactly one file"):
        apply_patch(BASE, one + one.replace("unit.py", "other.py"))


def test_a_shifted_hunk_applies_where_it_matches_uniquely() -> None:
    patch = "@@ -1,2 +1,2 @@\n def g(y):\n-    return y * 2\n+    return 0\n"
    patched, hunks = apply_patch(BASE, patch)
    assert patched.endswith("def g(y):\n    return 0\n")
    assert (hunks[0].line, hunks[0].offset) == (5, 4)


def test_an_ambiguous_shifted_hunk_is_refused() -> None:
    text = "a\nx\nb\nx\nc\n"
    with pytest.raises(PatchError, match="several other places"):
        apply_patch(text, "@@ -1,1 +1,1 @@\n-x\n+y\n")


def test_missing_final_newline_is_matched_exactly() -> None:
    old = "a\nb"
    patched, _ = apply_patch(old, make_diff(old, "a\nc"))
    assert patched == "a\nc"
    patched, _ = apply_patch(old, make_diff(old, "a\nb\n"))
    assert patched == "a\nb\n"
    # A patch that assumes a final newline does not match a file without one.
    with pytest.raises(PatchError, match="differ only in the final newline"):
        apply_patch(old, "@@ -2,1 +2,1 @@\n-b\n+c\n")


def test_empty_context_lines_without_their_space_are_read_as_blank_lines() -> None:
    patch = "@@ -2,4 +2,4 @@\n     return x\n\n\n-def g(y):\n+def g(z):\n"
    patched, _ = apply_patch(BASE, patch)
    assert "def g(z):" in patched


def test_insertion_into_an_empty_file_and_at_the_end() -> None:
    assert apply_patch("", "@@ -0,0 +1,2 @@\n+a\n+b\n")[0] == "a\nb\n"
    assert apply_patch("a\n", "@@ -1,0 +2,1 @@\n+b\n")[0] == "a\nb\n"
    with pytest.raises(PatchError, match="only 1 line"):
        apply_patch("a\n", "@@ -5,0 +6,1 @@\n+b\n")


def test_crlf_lines_keep_their_carriage_returns() -> None:
    old = "a\r\nb\r\n"
    patched, _ = apply_patch(old, "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n")
    assert patched == "a\r\nc\r\n"
    with pytest.raises(PatchError):
        apply_patch(old, "@@ -1,2 +1,2 @@\n a\n-b\n+c\n")


LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "def f():", "    pass"]), max_size=25)


def _text(lines: list[str], final_newline: bool) -> str:
    text = "\n".join(lines)
    return text + "\n" if lines and final_newline else text


@settings(max_examples=examples(300), deadline=None)
@given(
    old=LINES,
    new=LINES,
    old_nl=st.booleans(),
    new_nl=st.booleans(),
    context=st.integers(0, 4),
)
def test_any_generated_diff_applies_and_yields_the_target(
    old: list[str], new: list[str], old_nl: bool, new_nl: bool, context: int
) -> None:
    before, after = _text(old, old_nl), _text(new, new_nl)
    patch = make_diff(before, after, context)
    assume(patch)
    patched, hunks = apply_patch(before, patch)
    assert patched == after
    assert all(h.offset == 0 for h in hunks)


@settings(max_examples=examples(300), deadline=None)
@given(
    old=LINES.filter(bool),
    new=LINES,
    context=st.integers(0, 4),
    data=st.data(),
)
def test_a_corrupted_diff_is_refused(
    old: list[str], new: list[str], context: int, data: st.DataObject
) -> None:
    before, after = _text(old, True), _text(new, True)
    patch = make_diff(before, after, context)
    lines = patch.splitlines(keepends=True)
    # Lines the patch expects to find in the file: context and removed lines.
    expected = [
        i for i, line in enumerate(lines) if line[:1] in (" ", "-") and not line.startswith("---")
    ]
    assume(expected)
    i = data.draw(st.sampled_from(expected))
    # '§' never occurs in the file, so the corrupted line matches nowhere.
    lines[i] = lines[i][0] + "§" + lines[i][1:]
    with pytest.raises(PatchError, match="does not apply"):
        apply_patch(before, "".join(lines))
