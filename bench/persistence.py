"""What a mutating call costs to persist, small state against large, side by side.

Run: uv run python bench/persistence.py [--calls N] [--json]

Every call goes through the real tool path: a Space host on its own state
directory, the plugin's presets, and the resolved tool's ``run`` (schema check,
handler, runtime, persistence), as a client's ``tools/call`` ends up doing.

- drawing: ``space_drawing_insert_shape`` into a drawing of 10 objects and
  into one of 500 objects whose undo history is full (100 steps). Each timed
  insert is followed by an untimed ``space_drawing_undo``, so the sizes stay
  put; the redo step it leaves is cleared by the next insert, as in real use.
- scene: ``space_scene_set_camera`` in a scene without terrain and in one with
  the largest terrain (257 x 257 samples).

Small and large calls alternate, so both see the same machine. Figures are
medians in milliseconds, and the bytes the process wrote per call (``wchar``
of ``/proc/self/io``, where available). Targets: large / small <= 1.5.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET = 1.5
SMALL_DRAWING = 10
LARGE_DRAWING = 500
TERRAIN = 257


def _written() -> int:
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return 0
    return next(int(line.split()[1]) for line in text.splitlines() if line.startswith("wchar"))


class Side:
    """One host on its own state directory, calling tools as a client would."""

    def __init__(self, state: Path, plugin: Any, shell: list[tuple[str, Any]]) -> None:
        from agent_presets_general import SpaceHost

        self.host = SpaceHost(state)
        self.presets = self.host.start([plugin])
        for method, value in shell:
            getattr(self.host.shell, method)(value)
        self.times: list[float] = []
        self.bytes: list[int] = []

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        tool = self.presets.tool_registry.get(name)
        assert tool is not None, f"{name} is not offered"
        return tool.run(arguments)

    def timed(self, name: str, arguments: dict[str, Any]) -> None:
        written = _written()
        start = time.perf_counter()
        self.call(name, arguments)
        self.times.append((time.perf_counter() - start) * 1000)
        self.bytes.append(_written() - written)

    def close(self) -> None:
        close = getattr(self.host, "close", None)  # hosts before the state lock had none
        if close is not None:
            close()


def _rect(i: int) -> dict[str, Any]:
    return {"shape": "rect", "x": i % 700, "y": (i * 7) % 500, "width": 10, "height": 10}


def _drawing(state: Path, size: int) -> Side:
    import agent_presets_drawing

    shell = [("set_surface", "canvas"), ("set_activity", "drawing")]
    side = Side(state, agent_presets_drawing, shell)
    for i in range(size):
        side.call("space_drawing_insert_shape", _rect(i))
    return side


def _scene(state: Path, terrain: bool) -> Side:
    import agent_presets_scene

    side = Side(state, agent_presets_scene, [("set_surface", "scene")])
    if terrain:
        side.call("space_scene_add_terrain", {"seed": 7, "rows": TERRAIN, "cols": TERRAIN})
    return side


def _side_by_side(small: Side, large: Side, step: Callable[[Side, int], None], calls: int) -> None:
    for i in range(calls):
        first, second = (small, large) if i % 2 == 0 else (large, small)
        step(first, i)
        step(second, i)


def _insert_then_undo(side: Side, i: int) -> None:
    side.timed("space_drawing_insert_shape", _rect(i + 1000))
    side.call("space_drawing_undo", {})


def _move_camera(side: Side, i: int) -> None:
    side.timed("space_scene_set_camera", {"position": [i % 17, 5, 9], "target": [0, 0, 0]})


def _row(name: str, small: Side, large: Side) -> dict[str, Any]:
    s, big = statistics.median(small.times), statistics.median(large.times)
    return {
        "name": name,
        "small_ms": round(s, 3),
        "large_ms": round(big, 3),
        "ratio": round(big / s, 2),
        "small_bytes": int(statistics.median(small.bytes)),
        "large_bytes": int(statistics.median(large.bytes)),
        "ok": big / s <= TARGET,
    }


def _reset(*sides: Side) -> None:
    for side in sides:
        side.times.clear()
        side.bytes.clear()


def _close(*sides: Side) -> None:
    for side in sides:
        side.close()


def run(calls: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        small, large = _drawing(base / "d10", SMALL_DRAWING), _drawing(base / "d500", LARGE_DRAWING)
        _side_by_side(small, large, _insert_then_undo, 5)  # warm up
        _reset(small, large)
        _side_by_side(small, large, _insert_then_undo, calls)
        rows.append(_row(f"insert_shape: {SMALL_DRAWING} vs {LARGE_DRAWING} objects", small, large))
        _close(small, large)

        small, large = _scene(base / "s0", False), _scene(base / "s257", True)
        _side_by_side(small, large, _move_camera, 5)
        _reset(small, large)
        _side_by_side(small, large, _move_camera, calls)
        rows.append(_row(f"set_camera: no terrain vs {TERRAIN}x{TERRAIN}", small, large))
        _close(small, large)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="timed calls per side (default 60)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    rows = run(args.calls)
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'call':42} {'small ms':>9} {'large ms':>9} {'ratio':>6}  {'bytes small/large':>20}")
    for row in rows:
        verdict = "ok" if row["ok"] else f"over {TARGET}"
        print(
            f"{row['name']:42} {row['small_ms']:9.2f} {row['large_ms']:9.2f} "
            f"{row['ratio']:6.2f}  {row['small_bytes']:>9}/{row['large_bytes']:<10} {verdict}"
        )


if __name__ == "__main__":
    main()
