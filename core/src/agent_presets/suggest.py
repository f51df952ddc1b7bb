"""The one "did you mean" hint, for every error that names something unknown."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: object, known: Iterable[str], otherwise: str) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, else ``"; " + otherwise``.

    ``otherwise`` says where to find the names (``"`presets list` shows the
    names"``), so an error with no close match still tells its reader what to do.
    """
    import difflib  # only for an error: not imported at start-up

    text, names = str(name), list(known)
    # difflib's cutoff (0.6) needs the lengths within a factor of 2.3 of each
    # other, and it indexes every character of ``text`` first: a name a client
    # made megabytes long has no match, and must not cost that work.
    if len(text) > 3 * max(map(len, names), default=0):
        return f"; {otherwise}"
    close = difflib.get_close_matches(text, names, n=1)
    return f"; did you mean {close[0]!r}?" if close else f"; {otherwise}"
