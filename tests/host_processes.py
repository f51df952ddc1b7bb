"""Finding processes from the host by a marker in their command line, through ``/proc``.

A command under test starts, say, ``sleep 30.<marker>``; the host's ``/proc``
shows whether any such process is still alive, sandboxed or not (a PID
namespace's processes are visible from the host's).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path


def _command_lines() -> Iterator[tuple[int, bytes]]:
    """Each process's PID and its raw command line (arguments joined by NUL bytes)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            yield int(entry), Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:  # it ended while we looked
            continue


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # gone: no longer running either
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def processes_with(marker: str, *, running: bool = False) -> list[int]:
    """PIDs whose command line holds ``marker``; ``running``: not the zombies among them."""
    needle = marker.encode()
    found = [pid for pid, line in _command_lines() if needle in line]
    return [pid for pid in found if not _is_zombie(pid)] if running else found


def sleepers(marker: str) -> list[int]:
    """Host PIDs of ``sleep`` processes whose arguments contain ``marker``."""
    needle = marker.encode()
    found = []
    for pid, line in _command_lines():
        argv = line.split(b"\0")
        if argv[0] == b"sleep" and any(needle in arg for arg in argv[1:]):
            found.append(pid)
    return found


def sleepers_after(marker: str, seconds: float = 2.0) -> list[int]:
    """``sleepers(marker)`` once none is left, or after ``seconds`` (a kill takes a moment)."""
    deadline = time.monotonic() + seconds
    while (found := sleepers(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found
