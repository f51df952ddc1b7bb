"""Core benchmarks: resolution, cached resolve, context switches, YAML loading.

Run: uv run python bench/core.py [--quick] [--json]

Each figure is the median of several timed repeats, printed beside its target.
Because this machine is shared and noisy, the script also times a fixed
pure-Python baseline (a 100,000-step loop) in the same run, and prints every
figure as a ratio to it too, so runs on different days or machines compare.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from agent_presets import (
    Preset,
    PresetManager,
    PresetMcpSync,
    PresetRegistry,
    ToolAdapter,
    ToolAdapterRegistry,
    ToolRegistry,
)
from agent_presets.lib.loader import load_preset_text

SURFACES = ["scene", "canvas", "board", "doc", "map"]
ACTIVITIES = [None, "drawing", "graph", "notes", "review", "units", "play"]


def timed(fn: Callable[[], Any], repeat: int, number: int = 1) -> float:
    """Median seconds per call of fn over `repeat` samples of `number` calls."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def baseline() -> None:
    total = 0
    for i in range(100_000):
        total += i & 7


def synthetic_presets(count: int, tools_per: int) -> list[Preset]:
    presets = []
    for i in range(count):
        patterns = [
            {
                "surface": SURFACES[(i + k) % len(SURFACES)],
                "activity": ACTIVITIES[(i * 3 + k) % len(ACTIVITIES)] or "none",
            }
            for k in range(3)
        ]
        presets.append(
            Preset(
                name=f"p-{i}",
                group=f"g-{i % 10}",
                default_state="auto" if i % 7 else "off",
                risk="normal",
                contexts=tuple(patterns),
                tool_ids=tuple(f"t.x{i}-{j}" for j in range(tools_per)),
                system_prompt=f"prompt {i}",
            )
        )
    return presets


def adapters_for(presets: list[Preset]) -> ToolAdapterRegistry:
    registry = ToolAdapterRegistry(None)
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    for preset in presets:
        for tool_id in preset.tool_ids:
            registry.register(
                ToolAdapter(
                    tool_id,
                    "space_" + tool_id.replace(".", "_").replace("-", "_"),
                    "no-op",
                    schema,
                    lambda app, args: None,
                )
            )
    return registry


def context(surface: str, activity: str | None) -> dict[str, Any]:
    return {"surface": surface, "activity": activity, "canvas_visible": surface == "canvas"}


def bench_resolve(count: int, repeat: int) -> float:
    registry = PresetRegistry()
    for p in synthetic_presets(count, 1):
        registry.register(p)
    ctx = context("canvas", "drawing")
    registry.resolve(ctx)
    return timed(lambda: registry.resolve(ctx), repeat)


def bench_cached(repeat: int) -> float:
    presets = synthetic_presets(30, 3)
    registry = PresetRegistry()
    for p in presets:
        registry.register(p)
    manager = PresetManager(registry, adapters_for(presets), None, context("scene", None))
    return timed(manager.resolve, repeat, number=10_000)


def bench_switch(count: int, tools_per: int, repeat: int) -> tuple[float, int, int, int]:
    presets = synthetic_presets(count, tools_per)
    registry = PresetRegistry()
    for p in presets:
        registry.register(p)
    manager = PresetManager(registry, adapters_for(presets), None, context("scene", None))
    tool_registry = ToolRegistry("space_")
    notified = [0]
    tool_registry.add_on_change(lambda change: notified.__setitem__(0, notified[0] + 1))
    sync = PresetMcpSync(manager, tool_registry)
    sync.start()
    contexts = [context("canvas", "drawing"), context("scene", None)]
    # Warm both states once so the figure is the steady state of switching back and forth.
    for c in contexts:
        manager.set_context(c)
    state = [1]  # the last warmed context

    def switch() -> None:
        state[0] ^= 1
        manager.set_context(contexts[state[0]])

    before = notified[0]
    seconds = timed(switch, repeat)
    assert notified[0] - before == repeat, "every switch must notify the registry once"
    report = sync.last_report
    changed = len(report.added) + len(report.removed) + len(report.replaced)
    return seconds, len(presets), sum(len(p.tool_ids) for p in presets), changed


def bench_builtin_switch(repeat: int) -> tuple[float, int, int]:
    """The real built-in plugins: scene <-> canvas/drawing through manager, sync and registry."""
    from agent_presets import bootstrap

    presets = bootstrap(None, context=context("scene", None))
    manager = presets.manager
    contexts = [context("canvas", "drawing"), context("scene", None)]
    for c in contexts:
        manager.set_context(c)
    state = [1]

    def switch() -> None:
        state[0] ^= 1
        manager.set_context(contexts[state[0]])

    tools = sum(len(p.tool_ids) for p in presets.registry.list())
    return timed(switch, repeat), len(presets.registry), tools


def bench_switch_flip(count: int, tools_per: int, repeat: int) -> float:
    """Worst case: half the presets follow the scene, half the canvas; every tool changes."""
    presets = [
        Preset(
            name=f"f-{i}",
            default_state="auto",
            risk="normal",
            contexts=({"surface": "scene" if i % 2 else "canvas"},),
            tool_ids=tuple(f"t.f{i}-{j}" for j in range(tools_per)),
        )
        for i in range(count)
    ]
    registry = PresetRegistry()
    for p in presets:
        registry.register(p)
    manager = PresetManager(registry, adapters_for(presets), None, context("scene", None))
    PresetMcpSync(manager, ToolRegistry("space_")).start()
    contexts = [context("canvas", None), context("scene", None)]
    for c in contexts:
        manager.set_context(c)
    state = [1]

    def switch() -> None:
        state[0] ^= 1
        manager.set_context(contexts[state[0]])

    return timed(switch, repeat)


def bench_switch_cold(count: int, tools_per: int, repeat: int) -> float:
    """A switch whose resolution is not memoised (the memo is cleared before each switch)."""
    presets = synthetic_presets(count, tools_per)
    registry = PresetRegistry()
    for p in presets:
        registry.register(p)
    manager = PresetManager(registry, adapters_for(presets), None, context("scene", None))
    tool_registry = ToolRegistry("space_")
    PresetMcpSync(manager, tool_registry).start()
    contexts = [context("canvas", "drawing"), context("scene", None)]
    state = [0]

    def switch() -> None:
        state[0] ^= 1
        manager._memo.clear()
        manager.set_context(contexts[state[0]])

    return timed(switch, repeat)


def yaml_text(count: int) -> str:
    lines = ["presets:"]
    for p in synthetic_presets(count, 3):
        lines.append(f"  - name: {p.name}")
        lines.append(f"    group: {p.group}")
        lines.append(f"    default_state: {p.default_state}")
        lines.append("    risk: normal")
        lines.append("    contexts:")
        for pattern in p.contexts:
            lines.append("      - {" + ", ".join(f"{k}: {v}" for k, v in pattern.items()) + "}")
        lines.append(f"    tool_ids: [{', '.join(p.tool_ids)}]")
        lines.append(f"    system_prompt: {p.system_prompt}")
    return "\n".join(lines) + "\n"


def bench_yaml(count: int, repeat: int) -> float:
    text = yaml_text(count)
    assert len(load_preset_text(text, "bench.yaml")) == count
    return timed(lambda: load_preset_text(text, "bench.yaml"), repeat)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    r = 5 if args.quick else 21
    base = timed(baseline, r)
    small, small_presets, small_tools, small_changed = bench_switch(30, 3, r * 20)
    large, large_presets, large_tools, large_changed = bench_switch(1000, 5, r)
    builtin, builtin_presets, builtin_tools = bench_builtin_switch(r * 20)
    rows = [
        ("resolve 10,000 presets x 3 patterns, uncached", bench_resolve(10_000, r), 20e-3),
        ("cached resolve (manager.resolve)", bench_cached(r), 20e-6),
        (
            f"context switch + sync + notify, {small_presets} presets / {small_tools} tools "
            f"({small_changed} tools change)",
            small,
            1e-3,
        ),
        (
            f"context switch + sync + notify, {large_presets} presets / {large_tools} tools "
            f"({large_changed} tools change)",
            large,
            20e-3,
        ),
        (
            f"context switch, the installed built-ins ({builtin_presets} presets / "
            f"{builtin_tools} tools), scene <-> canvas+drawing",
            builtin,
            1e-3,
        ),
        (
            "context switch where all 5,000 tools change (2,500 out, 2,500 in)",
            bench_switch_flip(1000, 5, r),
            20e-3,
        ),
        (
            f"same, resolution not memoised, {large_presets} presets / {large_tools} tools",
            bench_switch_cold(1000, 5, r),
            20e-3,
        ),
        ("load + validate 1,000 presets from YAML", bench_yaml(1000, max(3, r // 3)), 1.0),
    ]
    results = [
        {
            "name": name,
            "seconds": s,
            "target_seconds": t,
            "meets_target": s <= t,
            "ratio_to_baseline": s / base,
        }
        for name, s, t in rows
    ]
    if args.json:
        print(json.dumps({"baseline_seconds": base, "results": results}, indent=2))
    else:
        print(f"baseline (100,000-step Python loop): {fmt(base)}")
        for row in results:
            mark = "ok " if row["meets_target"] else "MISS"
            print(
                f"{mark} {row['name']}: {fmt(row['seconds'])} (target <= "
                f"{fmt(row['target_seconds'])}; {row['ratio_to_baseline']:.3f}x baseline)"
            )
    return 0 if all(r["meets_target"] for r in results) else 1


def fmt(seconds: float) -> str:
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


if __name__ == "__main__":
    sys.exit(main())
