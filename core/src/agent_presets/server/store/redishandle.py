"""What the Redis store's parts (its event log, its token table) need of ``RedisStore``.

A Protocol of its own, so those parts type their store without importing the
module that imports them (the core has no import cycles, typing ones included).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol, TypeVar

from agent_presets.server.store.base import Subscriber

T = TypeVar("T")

LINGER: Final = 0.005
"""Seconds what goes out behind a call (counts, log lines) waits for others to join it: under
load, one round trip carries many calls' writes."""


class RedisHandle(Protocol):
    url: str
    timeout: float
    client: Any
    _loop: asyncio.AbstractEventLoop

    def key(self, *parts: str) -> str: ...

    def run(self, operation: Callable[[Any], Awaitable[T]]) -> T: ...

    def subscribe(self, callback: Subscriber) -> Callable[[], None]: ...

    def publish(self, topic: str, payload: Mapping[str, Any]) -> None: ...
