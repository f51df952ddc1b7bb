"""Shared by every plugin's tests: the crash-safety harness.

A writer process runs the headless host with the plugin and calls one
mutating tool in a loop, printing a counter after each call returns; the test
kills it with SIGKILL at a random moment (often mid-write), several times over
the same state directory, then reopens the host and counts what persisted.
Every call acknowledged before the kill must be there, and the state must
load: nothing lost, nothing half-written.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

WRITER = r"""
import importlib, json, sys
from agent_presets_general import SpaceHost

state, names, spec = sys.argv[1], sys.argv[2].split(","), json.loads(sys.argv[3])
host = SpaceHost(state)
presets = host.start([importlib.import_module(n) for n in names], overrides=spec["overrides"])
for method, *args in spec["shell"]:
    getattr(host.shell, method)(*args)
tool = presets.tool_registry.get(spec["tool"])
template = json.dumps(spec["args"])
i = 0
print("ready", flush=True)
while True:
    tool.run(json.loads(template.replace("@I@", f"{spec['round']}x{i}")))
    i += 1
    print(i, flush=True)
"""


class CrashHarness:
    def __init__(self, state: Path) -> None:
        self.state = state
        self.acknowledged = 0
        self.rounds = 0

    def run(
        self,
        plugins: list[str],
        *,
        tool: str,
        args: dict[str, Any],
        shell: list[list[Any]] | None = None,
        overrides: dict[str, str] | None = None,
        rounds: int = 3,
        seed: int = 0,
    ) -> None:
        rng = random.Random(seed)
        for _ in range(rounds):
            spec = {
                "tool": tool,
                "args": args,
                "shell": shell or [],
                "overrides": overrides or {},
                "round": self.rounds,
            }
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WRITER,
                    str(self.state),
                    ",".join(plugins),
                    json.dumps(spec),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            try:
                assert proc.stdout is not None
                first = proc.stdout.readline().strip()
                assert first == "ready", proc.stderr.read() if proc.stderr else first
                target = rng.randint(3, 25)
                last = 0
                while last < target:
                    line = proc.stdout.readline()
                    assert line, f"writer died: {proc.stderr.read() if proc.stderr else ''}"
                    last = int(line)
                time.sleep(rng.uniform(0, 0.01))  # land inside the next call's write
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                # Lines printed before the kill are calls that had returned.
                rest = proc.stdout.read()
                for line in rest.split():
                    last = max(last, int(line))
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
                if proc.stdout:
                    proc.stdout.close()
                if proc.stderr:
                    proc.stderr.close()
            self.acknowledged += last
            self.rounds += 1

    def debris(self) -> list[str]:
        """Temp files left in the state directory (none once a host has opened it again)."""
        return sorted(str(p.relative_to(self.state)) for p in self.state.rglob("*.tmp"))

    def check(self, persisted: int) -> None:
        """At least every acknowledged call; at most one unacknowledged call per kill."""
        assert self.acknowledged <= persisted <= self.acknowledged + self.rounds, (
            self.acknowledged,
            persisted,
        )


@pytest.fixture
def crash_harness(tmp_path: Path) -> Callable[[], CrashHarness]:
    return lambda: CrashHarness(tmp_path / "state")
