"""Calling change listeners so that one failing listener does not silence the rest."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def call_listeners(listeners: Sequence[Callable[..., Any]], *args: Any) -> None:
    """Call every listener with ``args``; then re-raise the first error, if any.

    Every listener hears every change even when an earlier one fails; the
    failure still reaches the caller, with later failures attached as notes.
    """
    first: BaseException | None = None
    for callback in list(listeners):
        try:
            callback(*args)
        except Exception as exc:
            if first is None:
                first = exc
            else:
                first.add_note(f"another change listener also failed: {exc!r}")
    if first is not None:
        raise first
