"""What the event log says about a session: calls, refusals, latency, approvals.

``presets stats`` prints these numbers and the console draws them; both call
``compute`` (or feed a ``Stats`` line by line) so the numbers are computed in
one place. Lines of kinds this module does not know, and fields it does not
use, are ignored (``docs/events.md``: a reader keeps what it understands).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_presets.server.events import read_events


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (sorted or not); None when empty.

    Nearest rank, not interpolation: the answer is a latency some call really
    had, which is what a person reading "p95" expects.
    """
    return _nearest_rank(sorted(values), fraction)


def _nearest_rank(ordered: list[float], fraction: float) -> float | None:
    if not ordered:
        return None
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Stats:
    """Counts kept while reading events; ``to_json`` gives the finished numbers."""

    calls: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    by_token: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    decisions: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    events: int = 0

    def add(self, event: Mapping[str, Any]) -> None:
        """Count one event (a dict as ``read_events`` yields it)."""
        self.events += 1
        kind = event.get("kind")
        if kind == "call":
            tool = str(event.get("tool"))
            self.calls[tool] += 1
            if event.get("ok") is False:
                self.failed[tool] += 1
            token = event.get("token")
            if isinstance(token, str):
                self.by_token[token] += 1
            latency = event.get("latency_ms")
            if isinstance(latency, int | float) and not isinstance(latency, bool):
                self.latencies.append(float(latency))
        elif kind == "refusal":
            count = event.get("count")
            # A summary line stands for ``count`` refusals of a spent budget.
            self.refusals[str(event.get("gate"))] += (
                count if isinstance(count, int) and count > 0 else 1
            )
        elif kind == "decision":
            self.decisions[str(event.get("outcome"))] += 1

    def remove(self, part: Stats) -> None:
        """Take back what ``part`` counted: the events of a file that has left the log.

        ``part`` must hold events this ``Stats`` counted. A follower of a live
        log (the console) counts each file into its own ``Stats`` too, so a
        rotation costs one pass over the latencies, not a reading of the log.
        """
        self.events -= part.events
        for mine, theirs in (
            (self.calls, part.calls),
            (self.failed, part.failed),
            (self.refusals, part.refusals),
            (self.decisions, part.decisions),
        ):
            mine.subtract(theirs)
            for key in [k for k, n in mine.items() if n <= 0]:
                del mine[key]
        if part.latencies:
            gone = Counter(part.latencies)
            kept = []
            for latency in self.latencies:
                if gone[latency] > 0:
                    gone[latency] -= 1
                else:
                    kept.append(latency)
            self.latencies = kept

    def to_json(self) -> dict[str, Any]:
        """The numbers ``presets stats --json`` prints (``docs/console.md``)."""
        # Sorted in place: asked again after a few more events (the console asks
        # four times a second), sorting a sorted list and a short tail is quick.
        self.latencies.sort()
        approved = self.decisions.get("approved", 0)
        # Decided means a person (or the elicitation) answered: approved or denied.
        decided = approved + self.decisions.get("denied", 0)
        return {
            "events": self.events,
            "calls": sum(self.calls.values()),
            "calls_by_tool": dict(self.calls.most_common()),
            "failed_by_tool": dict(self.failed.most_common()),
            "calls_by_token": dict(self.by_token.most_common()),
            "refusals": sum(self.refusals.values()),
            "refusals_by_gate": dict(self.refusals.most_common()),
            "latency_ms": {
                "p50": _nearest_rank(self.latencies, 0.50),
                "p95": _nearest_rank(self.latencies, 0.95),
            },
            "decisions": dict(self.decisions.most_common()),
            "approval_rate": approved / decided if decided else None,
        }


def compute(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The stats of ``events``, as ``Stats.to_json`` gives them."""
    stats = Stats()
    for event in events:
        stats.add(event)
    return stats.to_json()


def stats_of_log(path: str | Path) -> dict[str, Any]:
    """The stats of the event log at ``path``, its rotated files included."""
    return compute(read_events(path))
