"""The two lanes on a machine without a system package a test needs (tests/system_packages.py).

The quick lane skips such a test and prints what to install; the full lane
runs it, and its skip fails the run: CI cannot pass without the package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
NEEDS_SANDBOX = "tests/plugins/general/test_general_bash.py::test_runs_in_the_file_root"


def lane(*options: str) -> subprocess.CompletedProcess[str]:
    # Only the environment's own scripts on PATH: no bwrap, as on a machine with only Python.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
         *options, NEEDS_SANDBOX],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow  # two pytest runs, each importing every plugin
def test_a_missing_system_package_skips_in_the_quick_lane_and_fails_the_full_lane() -> None:
    quick = lane()
    assert quick.returncode == 0, quick.stdout + quick.stderr
    assert "SKIPPED" in quick.stdout
    assert "needs bubblewrap (apt-get install bubblewrap)" in quick.stdout
    full = lane("--full")
    assert full.returncode == 1, full.stdout + full.stderr
    assert "full lane: 1 test(s) skipped, and the full lane skips nothing" in full.stdout
