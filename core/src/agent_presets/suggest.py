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

    close = difflib.get_close_matches(str(name), list(known), n=1)
    return close[0] if close else None
