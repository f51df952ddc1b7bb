"""Calling change listeners so that one failing listener does not silence the rest."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

C = TypeVar("C", bound=Callable[..., Any])


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


class Listeners(Generic[C]):
    """The change listeners of one object: add, remove, and tell them all.

    The registry, the manager and the tool registry each keep one of these, so
    adding twice, removing an unknown callback and one failing listener behave
    the same everywhere.
    """

    def __init__(self) -> None:
        self._callbacks: list[C] = []

    def add(self, callback: C) -> None:
        self._callbacks.append(callback)

    def remove(self, callback: C) -> None:
        """Forget ``callback``; removing one that was never added is not an error."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def notify(self, *args: Any) -> None:
        """Call every listener (see ``call_listeners``)."""
        call_listeners(self._callbacks, *args)

    def __len__(self) -> int:
        return len(self._callbacks)
