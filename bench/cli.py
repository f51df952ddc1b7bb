"""`presets validate` on the installed built-ins against importing yaml and jsonschema.

Run: uv run python bench/cli.py [--rounds N] [--json]

Target (issue 4): `presets validate` (no path: every installed plugin's presets
and adapters) takes at most 3x the time of `python -c "import yaml, jsonschema"`.
Both are started as fresh processes, alternating, and the figure is the ratio
of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

BASELINE = [sys.executable, "-c", "import yaml, jsonschema"]
VALIDATE = [sys.executable, "-m", "agent_presets", "validate"]
TARGET = 3.0


def once(command: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    once(BASELINE), once(VALIDATE)  # warm the OS file cache
    base: list[float] = []
    validate: list[float] = []
    for i in range(args.rounds):
        pair = [(base, BASELINE), (validate, VALIDATE)]
        for samples, command in pair if i % 2 == 0 else reversed(pair):
            samples.append(once(command))
    b, v = statistics.median(base), statistics.median(validate)
    result = {"baseline_seconds": b, "validate_seconds": v, "ratio": v / b, "target": TARGET}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"python -c 'import yaml, jsonschema': {b * 1e3:.0f} ms")
        print(f"presets validate (installed plugins): {v * 1e3:.0f} ms")
        print(f"{'ok ' if v / b <= TARGET else 'MISS'} ratio {v / b:.2f}x (target <= {TARGET}x)")
    return 0 if v / b <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
