"""What the Redis store's parts (its event log, its token table) need of ``RedisStore``.

A Protocol of its own, so those parts type their store without importing the
module that imports them (the core has no import cycles, typing ones included).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from agent_presets.server.store.base import Subscriber

T = TypeVar("T")


class RedisHandle(Protocol):
    url: str
    timeout: float
    client: Any
    _loop: asyncio.AbstractEventLoop

    def key(self, *parts: str) -> str: ...

    def run(self, operation: Callable[[Any], Awaitable[T]]) -> T: ...

    def subscribe(self, callback: Subscriber) -> Callable[[], None]: ...
