"""Everything a server keeps, behind one interface: embedded (the default) or Redis.

The interface and its records are in ``base``; ``EmbeddedStore`` (``embedded``)
keeps one server's state in its memory and state directory, and
``open_store`` opens what a ``--store`` value names.

The host's runtimes keep their tables beside it: in the state directory's
SQLite database (``statedb``) or on Redis (``redisrows``), each transaction
made once however deeply its blocks nest (``nesting``); one server at a time
writes a state directory (``lock``).
"""

from __future__ import annotations

from typing import Any

from agent_presets.server.store.base import (
    SERVER,
    PrincipalState,
    Store,
    StoreSettingsError,
    StoreUnavailableError,
    Subscriber,
)

__all__ = [
    "SERVER",
    "PrincipalState",
    "Store",
    "StoreSettingsError",
    "StoreUnavailableError",
    "Subscriber",
    "open_store",
]


def open_store(url: str | None, state_dir: Any = None, *, check: bool = False) -> Store:
    """The store a ``--store`` value names: None or ``embedded``, or ``redis://...``.

    ``check``: ask it to answer now (a shared store may be down or misconfigured);
    one that cannot is closed, and ``StoreUnavailableError`` or
    ``StoreSettingsError`` says why. An unknown URL raises ``ValueError``.
    """
    store = _open(url, state_dir)
    ping = getattr(store, "ping", None) if check else None
    if ping is not None:
        try:
            ping()
        except (StoreUnavailableError, StoreSettingsError):
            store.close()
            raise
    return store


def _open(url: str | None, state_dir: Any) -> Store:
    if url is None or url == "embedded":
        from agent_presets.server.store.embedded import EmbeddedStore

        return EmbeddedStore(state_dir)
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from agent_presets.server.store.redis import RedisStore
        except ImportError as exc:
            raise StoreUnavailableError(str(exc)) from None
        return RedisStore(url)
    raise ValueError(
        f"--store {url!r} is not a store this server knows: use embedded (the default) "
        "or redis://HOST:PORT/DB"
    )
