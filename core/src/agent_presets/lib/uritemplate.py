"""URI templates of resource templates: parsing (for ``presets validate``) and matching.

A resource template declares a URI pattern in RFC 6570 syntax, such as
``graph://node/{node_id}``; ``resources/read`` asks for a concrete URI, and
the server finds the template it fits and the values of its variables.
RFC 6570 only defines expansion, so matching is this module's reading of it,
kept to what can be matched without guessing:

- expressions ``{var}``, ``{+var}``, ``{#var}``, ``{.var}``, ``{/var}``,
  ``{;var}``, ``{?var}`` and ``{&var}``, each with one or more variables
  (``{/a,b}``);
- no prefix (``{var:3}``) or explode (``{var*}``) modifiers: their expansions
  cannot be read back without ambiguity;
- two expressions need a literal between them, unless the second brings its
  own separator (``{a}{.b}``, ``{a}{/b}``): ``{a}{b}`` could split ``xyz``
  anywhere;
- at most one ``+`` or ``#`` variable, which may hold ``/``.

One parser serves both ``presets validate`` (a template that does not parse
is a located problem) and the server (which matches what parsed), so the
two cannot disagree. It raises ``ValueError`` with a message that says what
is wrong and what to write instead; a variable never holds the character
that follows it, so matching a client's URI is linear in its length (see
``_regex``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

MAX_TEMPLATE_LENGTH: Final = 2048
MAX_URI_LENGTH: Final = 8192
"""A longer URI matches no template: no resource is named by 8 KiB of text."""

_VARNAME: Final = re.compile(r"^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$")
_OPERATORS: Final = "+#./;?&"
_LITERAL_BAD: Final = re.compile(r"[\s\"'<>\\^`|{}\x00-\x1f\x7f]")

# What one variable's value may hold, by operator (before percent-decoding).
_VALUE: Final = {
    "": r"[^/?#&,;=]*",
    "+": r"[^?#]*",
    "#": r".*",
    ".": r"[^/?#.,;&]*",
    "/": r"[^/?#,;&]*",
    ";": r"[^/?#,;&]*",
    "?": r"[^&#,]*",
    "&": r"[^&#,]*",
}


@dataclass(frozen=True)
class UriTemplate:
    """A parsed URI template: its text, its variables in order, and the matcher built from it."""

    text: str
    variables: tuple[str, ...]
    _pattern: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> UriTemplate:
        """Parse ``text``; ``ValueError`` says what does not parse, at which character."""
        if not isinstance(text, str) or not text:
            raise ValueError("a URI template must be a non-empty string, like 'notes://{id}'")
        if len(text) > MAX_TEMPLATE_LENGTH:
            raise ValueError(f"the template is longer than {MAX_TEMPLATE_LENGTH} characters")
        parts: list[tuple[str, str, list[str], int]] = []
        """Each literal as ``("", text, [], 0)``; each expression as ``(op, "", names, first)``."""
        variables: list[str] = []
        multi = 0
        last_was_expression = False
        index = 0
        while index < len(text):
            char = text[index]
            if char == "}":
                raise ValueError(f"'}}' at character {index + 1} closes no expression")
            if char != "{":
                end = text.find("{", index)
                end = len(text) if end < 0 else end
                literal = text[index:end]
                if "}" in literal:
                    at = index + literal.index("}")
                    raise ValueError(f"'}}' at character {at + 1} closes no expression")
                bad = _LITERAL_BAD.search(literal)
                if bad is not None:
                    raise ValueError(
                        f"character {bad.start() + index + 1} ({bad.group()!r}) is not allowed "
                        "in a URI; percent-encode it"
                    )
                parts.append(("", literal, [], 0))
                last_was_expression = False
                index = end
                continue
            close = text.find("}", index)
            if close < 0:
                raise ValueError(f"the expression at character {index + 1} has no closing '}}'")
            body = text[index + 1 : close]
            nested = body.find("{")
            if nested >= 0:
                raise ValueError(
                    f"the expression at character {index + 1} opens another at character "
                    f"{index + 2 + nested}; close it first"
                )
            operator = body[0] if body and body[0] in _OPERATORS else ""
            names = body[len(operator) :].split(",")
            for name in names:
                if name.endswith("*") or ":" in name:
                    raise ValueError(
                        f"{{{body}}} at character {index + 1} uses "
                        f"{'an explode (*)' if name.endswith('*') else 'a prefix (:N)'} modifier, "
                        "which a resource template cannot be matched with; write plain "
                        "variables such as {id}"
                    )
                if not _VARNAME.match(name):
                    raise ValueError(
                        f"{{{body}}} at character {index + 1}: {name!r} is not a variable name "
                        "(letters, digits and '_', like node_id)"
                    )
                if name in variables:
                    raise ValueError(f"the variable {name!r} appears twice; name each once")
                variables.append(name)
            if operator in ("+", "#"):
                multi += len(names)
                if multi > 1:
                    raise ValueError(
                        f"{{{body}}} at character {index + 1}: only one '+' or '#' variable "
                        "may take the rest of a URI; split the others with literals"
                    )
            if operator in ("", "+") and last_was_expression:
                raise ValueError(
                    f"{{{body}}} at character {index + 1} follows another variable with "
                    "nothing between them, so a URI cannot say where one ends; put a "
                    "literal such as '/' between them"
                )
            parts.append((operator or "=", "", names, len(variables) - len(names)))
            last_was_expression = True
            index = close + 1
        if not variables:
            raise ValueError(
                "the template has no variable; a resource with one fixed URI is declared "
                "with uri:, not uri_template:"
            )
        pattern = re.compile(_regex(parts), re.DOTALL)
        return cls(text, tuple(variables), pattern)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values if ``uri`` fits this template (percent-decoded), else None.

        A variable the URI leaves out (an optional query part) is not in the result.
        """
        if len(uri) > MAX_URI_LENGTH:
            return None
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        for index, name in enumerate(self.variables):
            value = found.group(f"v{index}")
            if value is not None:
                values[name] = unquote(value)
        return values


def _regex(parts: list[tuple[str, str, list[str], int]]) -> str:
    """The matcher of a parsed template: literals escaped, each expression's groups.

    A value never holds the character that follows it in the template (the
    next literal's first, or the next expression's lead), so each variable
    ends at the first one and the match never backtracks through the
    variables: linear in the URI's length. The one ``+`` or ``#`` variable may
    hold it (a path holds '/'); only that one can make the match back up.
    """
    out = []
    for index, (operator, literal, names, first) in enumerate(parts):
        if not names:
            out.append(re.escape(literal))
            continue
        following = parts[index + 1] if index + 1 < len(parts) else None
        if following is None:
            stop = ""
        elif not following[2]:
            stop = following[1][0]
        else:
            stop = following[0] if following[0] != "=" else ""
        out.append(_expression("" if operator == "=" else operator, names, first, stop))
    return "".join(out)


def _expression(operator: str, names: list[str], first: int, stop: str) -> str:
    """The regex of one expression; its groups are numbered ``v<first>``, ``v<first+1>``..."""
    value = _VALUE[operator]
    if stop and operator not in ("+", "#") and value.startswith("[^"):
        value = "[^" + re.escape(stop) + value[2:]
    groups = [f"(?P<v{first + i}>{value})" for i in range(len(names))]
    if operator in ("", "+"):
        return ",".join(groups)
    if operator == "#":
        return "#" + ",".join(groups)
    if operator in "./":
        return "".join(re.escape(operator) + g for g in groups)
    if operator == ";":
        return "".join(f";{re.escape(n)}(?:={g})?" for n, g in zip(names, groups, strict=True))
    # A query part may be left out, as expansion leaves out an undefined variable.
    pairs = [f"{re.escape(n)}={g}" for n, g in zip(names, groups, strict=True)]
    return f"(?:{re.escape(operator)}{'&'.join(pairs)})?"
