"""Agent text as a person may safely read it: one rule for every screen.

An agent writes request reasons and tool arguments, and a person reads them
(``presets requests``, ``presets approve``, the console, an elicitation the
client shows). Written raw, that text can steer the terminal instead: an
escape sequence erases or redraws rows, retitles the window or opens a link;
a newline forges a line of output; a bidi override reorders what is read.
So every character that is not printable (``str.isprintable``: control and
format characters, line and paragraph separators, unassigned code points)
is shown as its Python escape, and a backslash as ``\\\\``, which keeps the
shown text unambiguous: ``\\x1b`` on screen is an ESC, ``\\\\x1b`` four
characters. Rich markup is not this module's business: callers that print
through rich pass the result as ``rich.text.Text``, never as markup.

``svg_safe`` is the same care for pictures: an agent's name inside an SVG
must not make the whole picture malformed XML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

_NAMED: Final = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(text: str) -> str:
    """``text`` with backslashes doubled and every non-printable character escaped.

    ``"a\\x1b[2K\\nb"`` is shown as ``a\\x1b[2K\\nb``: nothing in the result moves
    the cursor, rings a bell or starts a line.
    """
    if text.isprintable() and "\\" not in text:  # the common case: nothing to escape
        return text
    return "".join(_escape(ch) for ch in text)


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown_value(value: Any) -> str:
    """One argument value as shown: a string quoted (``'notes.txt'``), anything else as JSON.

    A quote inside a string is escaped, so one value can never read as two
    arguments (``path='a', content='b'`` is one value only if shown so).
    """
    if isinstance(value, str):
        return "'" + shown(value).replace("'", "\\'") + "'"
    return shown(json.dumps(value, ensure_ascii=False, default=str))


MAX_SHOWN_ARGS: Final = 8
"""Arguments a clipped summary names; the rest are counted."""
MAX_VALUE: Final = 40
"""Characters of a shown value a clipped summary keeps."""


def shown_arguments(arguments: Mapping[str, Any], *, clip: bool = True) -> tuple[str, bool]:
    """``path='notes.txt', content='hello wor…' (52 chars)``, and whether it left anything out.

    ``clip=False`` shows every argument in full: what a person approving the
    call must be able to read.
    """
    items = list(arguments.items())
    clipped = clip and len(items) > MAX_SHOWN_ARGS
    parts = []
    for name, value in items[:MAX_SHOWN_ARGS] if clip else items:
        text = shown_value(value)
        if clip and len(text) > MAX_VALUE:
            length = len(value) if isinstance(value, str) else len(text)
            text = f"{text[: MAX_VALUE - 1]}… ({length} chars)"
            clipped = True
        parts.append(f"{shown(str(name))}={text}")
    if clipped and len(items) > MAX_SHOWN_ARGS:
        parts.append(f"and {len(items) - MAX_SHOWN_ARGS} more")
    return (", ".join(parts) if parts else "no arguments"), clipped


_UNFIT: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def svg_safe(svg: str) -> str:
    """``svg`` with every character XML 1.0 forbids, and every C1 control, made U+FFFD.

    A name the agent chose (a layer, a node label, a scene object) may hold a
    control character; ElementTree escapes markup but writes ``\x01`` as it
    is, and one such character makes the whole picture malformed XML, which
    the browser then refuses to draw. No markup holds these characters, so
    replacing them in the written text changes only the names. The built-in
    plugins' pictures and the console (for any plugin's view) pass through it.
    """
    return _UNFIT.sub("\ufffd", svg)
