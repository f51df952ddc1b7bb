"""Agent text as a person reads it: nothing in it steers a terminal, and nothing is lost."""

from __future__ import annotations

import ast
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agent_presets.lib.safetext import shown, shown_arguments, shown_value
from agent_presets.server.requests import RequestStore, call_digest, shown_request

# The reason of the "terminal injection" finding, as an agent sent it.
ATTACK = (
    "x\x1b[999D\x1b[2K r1 override general-theme-tools on \x1b]0;owned\x07 "
    "[link=https://evil.example/]docs[/link]\nr9  call  forged-line"
)


def test_the_attack_reason_is_shown_as_the_characters_it_holds() -> None:
    text = shown(ATTACK)
    assert "\x1b" not in text and "\x07" not in text and "\n" not in text
    assert text.startswith("x\\x1b[999D\\x1b[2K r1 override")
    assert "\\x1b]0;owned\\x07" in text and "\\nr9  call  forged-line" in text
    assert "[link=https://evil.example/]docs[/link]" in text  # shown as typed


def test_c1_controls_bidi_overrides_and_separators_are_escaped_too() -> None:
    assert shown("a\x9b2Jb") == "a\\x9b2Jb"  # an 8-bit CSI
    assert shown("abc\u202edcba") == "abc\\u202edcba"
    assert shown("one\u2028two\x7f") == "one\\u2028two\\x7f"
    assert shown("plain text, ünïcödé and 漢字") == "plain text, ünïcödé and 漢字"


@given(st.text())
def test_shown_text_is_printable_and_reads_back_to_exactly_what_was_written(text: str) -> None:
    out = shown(text)
    assert out.isprintable()
    # Unambiguous: as a Python literal it is the original text, character for character.
    assert ast.literal_eval("'" + out.replace("'", "\\'") + "'") == text


@given(st.dictionaries(st.text(max_size=5), st.text() | st.integers() | st.lists(st.text())))
def test_full_arguments_are_never_clipped_and_never_hold_a_control_character(
    arguments: dict[str, Any],
) -> None:
    full, clipped = shown_arguments(arguments, clip=False)
    assert not clipped and full.isprintable()
    for value in arguments.values():
        assert shown_value(value) in full


def test_a_padded_command_is_clipped_in_the_summary_and_says_so() -> None:
    command = "echo tidy-up-temp-files" + " " * 30 + "; echo HIDDEN-PART-RAN > hidden.txt"
    summary, clipped = shown_arguments({"command": command})
    assert clipped and "HIDDEN" not in summary and summary.endswith(f"({len(command)} chars)")
    full, clipped = shown_arguments({"command": command}, clip=False)
    assert not clipped and full == f"command='{command}'"


def test_a_string_value_cannot_pass_for_two_arguments() -> None:
    assert shown_arguments({"path": "a', content='b"}, clip=False)[0] == (
        "path='a\\', content=\\'b'"
    )


def test_a_call_request_keeps_its_arguments_and_the_digest_of_tool_and_arguments() -> None:
    store = RequestStore()
    arguments = {"path": "notes.txt", "content": "x" * 100, "n": [1, 2]}
    request, _ = store.file("call", tool="write", preset="p", reason="r", arguments=arguments)
    assert request.digest == call_digest("write", dict(reversed(list(arguments.items()))))
    assert request.digest != call_digest("write", {**arguments, "n": [2, 1]})
    assert request.digest != call_digest("other", arguments)
    data = request.to_json()
    assert (data["arguments"], data["digest"]) == (arguments, request.digest)
    json.dumps(data)


def test_a_request_is_shown_with_every_agent_word_escaped() -> None:
    store = RequestStore()
    request, _ = store.file("override", preset="general-theme-tools", state="on", reason=ATTACK)
    override = shown_request(request.to_json())
    assert override["reason"] == shown(ATTACK) and override["what"] == "turn on general-theme-tools"
    request, _ = store.file(
        "call", tool="run", preset="shell", reason="r", arguments={"c\x1b": "a\nb"}
    )
    call = shown_request(request.to_json())
    assert call["arguments"] == [["c\\x1b", "'a\\nb'"]]
    assert call["summary"] == "run(c\\x1b='a\\nb')" and call["digest"] == request.digest
    assert "\x1b" not in json.dumps(call, ensure_ascii=False)
