"""Finding a shell command's processes from the host, by a marker in their arguments.

A command under test starts ``sleep 30.<marker>``; the host's ``/proc`` shows
whether any such process is still alive, sandboxed or not (a PID namespace's
processes are visible from the host's).
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def sleepers(marker: str) -> list[int]:
    """Host PIDs of ``sleep`` processes whose arguments contain ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0] == b"sleep" and any(marker.encode() in arg for arg in argv[1:]):
            found.append(int(entry))
    return found


def sleepers_after(marker: str, seconds: float = 2.0) -> list[int]:
    """``sleepers(marker)`` once none is left, or after ``seconds`` (a kill takes a moment)."""
    deadline = time.monotonic() + seconds
    while (found := sleepers(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
