"""Many principals on one server: what they cost in memory, and what a context switch costs.

Run: uv run python bench/principals.py [--principals N] [--switches N] [--json]

The Space host with every built-in plugin, its server's ``Principals``
over the embedded store, and N principals (default 10,000), each switched to
a context of its own (its own world, half of them on the canvas drawing),
each then served its tool list once, as a principal's first ``tools/list``
does. Figures, all in one run:

- memory: the Python heap (``tracemalloc``) the N principals hold over a
  server with one, measured after each has been served its list (target
  <= 50 MB at 10,000), and what is left after their idle expiry;
- context switch: one principal switching between two contexts and being
  served its new list, timed at 1 principal and again at N (the median of
  ``--switches`` switches each; target: the ratio <= 1.2).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any


def _server(state: Path) -> tuple[Any, Any, Any]:
    from agent_presets.server.principals import Principals
    from agent_presets.server.store.embedded import EmbeddedStore
    from agent_presets_general import SpaceHost

    host = SpaceHost(state)
    presets = host.start()
    clock = [0.0]
    principals = Principals(presets.manager, EmbeddedStore(), clock=lambda: clock[0])
    return host, principals, clock


def _switches(principals: Any, name: str, count: int) -> float:
    """Median seconds of one switch of ``name`` (and its next list), over ``count``."""
    contexts = ({"surface": "canvas", "activity": "drawing"}, {"surface": "scene"})
    times = []
    for i in range(count):
        start = time.perf_counter()
        principals.set_context(name, contexts[i % 2])
        principals.tool_defs(name)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _populate(principals: Any, count: int) -> None:
    """Principals p1 ... p(count-1), each in a world of its own, each served its list."""
    for i in range(1, count):
        name = f"p{i}"
        fields: dict[str, Any] = {"world_id": f"w{i}"}
        if i % 2:
            fields.update(surface="canvas", activity="drawing")
        principals.set_context(name, fields)
        principals.tool_defs(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--principals", type=int, default=10_000)
    parser.add_argument("--switches", type=int, default=2_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        host, principals, clock = _server(Path(tmp) / "state")
        try:
            principals.set_context("p0", {"world_id": "w0"})
            principals.tool_defs("p0")
            _switches(principals, "p0", args.switches)  # warm: the memo, the caches
            one = _switches(principals, "p0", args.switches)

            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            _populate(principals, args.principals)
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before

            # Idle expiry: nobody uses them for longer than the idle time.
            in_memory = principals.in_memory()
            clock[0] += principals.idle_seconds + 1
            principals.tool_defs("p0")  # the next look sweeps
            gc.collect()
            freed = held - (tracemalloc.get_traced_memory()[0] - before)
            tracemalloc.stop()
            after_idle = principals.in_memory()

            # The same population again, untraced, for the switch at N.
            _populate(principals, args.principals)
            many = _switches(principals, "p0", args.switches)
        finally:
            host.close()

    figures = {
        "principals": args.principals,
        "memory_mb": round(held / 2**20, 1),
        "memory_target_mb": 50,
        "held_before_idle": in_memory,
        "held_after_idle": after_idle,
        "freed_by_idle_mb": round(freed / 2**20, 1),
        "switch_us_at_1": round(one * 1e6, 1),
        f"switch_us_at_{args.principals}": round(many * 1e6, 1),
        "switch_ratio": round(many / one, 2),
        "switch_ratio_target": 1.2,
    }
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
    else:
        print(
            f"{args.principals:,} principals hold {figures['memory_mb']} MB "
            f"(target <= 50 MB); idle expiry: {in_memory:,} -> {after_idle:,} held, "
            f"{figures['freed_by_idle_mb']} MB freed"
        )
        print(
            f"a context switch: {figures['switch_us_at_1']} us at 1 principal, "
            f"{figures[f'switch_us_at_{args.principals}']} us at {args.principals:,} "
            f"({figures['switch_ratio']}x, target <= 1.2x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
