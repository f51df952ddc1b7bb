"""The one "did you mean" hint, for every error that names something unknown."""

from __future__ import annotations

from collections.abc import Iterable


def did_you_mean(name: object, known: Iterable[str], otherwise: str) -> str:
    """``"; did you mean 'x'?"`` for the closest known name, else ``"; " + otherwise``.

    ``otherwise`` says where to find the names (``"`presets list` shows the
    names"``), so an error with no close match still tells its reader what to do.
    """
    close = closest(name, known)
    return f"; did you mean {close!r}?" if close is not None else f"; {otherwise}"


def closest(name: object, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, when one is close enough to be what was meant."""
    import difflib  # only for an error: not imported at start-up

    text, names = str(name), list(known)
    # difflib's cutoff (0.6) needs the lengths within a factor of 2.3 of each
    # other, and it indexes every character of ``text`` first: a name a client
    # made megabytes long has no match, and must not cost that work.
    if len(text) > 3 * max(map(len, names), default=0):
        return None
    close = difflib.get_close_matches(text, names, n=1)
    return close[0] if close else None
