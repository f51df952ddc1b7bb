"""Keeps an upstream's processes from outliving the server: run as a script, stdlib only.

``python -S -E upstream_guard.py SERVER_PID -- COMMAND ARGS...`` starts the
command in the guard's own process group (the SDK makes the guard a group
leader) with the guard's stdin, stdout and stderr, and waits. When the
command exits, the guard exits with its status. When the server dies, even
by SIGKILL, which no ``finally`` survives, the guard sees it (a pidfd of
the server, or its parent changing) and ends the whole group: ``npx``, the
``node`` it started, and anything they started. A SIGTERM to the guard (the
SDK's shutdown) does the same.

It imports nothing of agent_presets, so starting it costs a bare Python
start-up, not the server's imports.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time

GRACE = 2.0
"""Seconds the group has to exit on SIGTERM before it is killed."""


def _end_group(status: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        try:
            # Any process left in the group but this one?
            os.killpg(os.getpgrp(), 0)
        except OSError:
            break
        if not _others_in_group():
            break
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)  # the guard is in the group: it ends here too
    os._exit(status)


def _others_in_group() -> bool:
    group, me = os.getpgrp(), os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: upstream_guard.py SERVER_PID -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    server = int(argv[1])
    command = argv[3:]
    signal.signal(signal.SIGTERM, lambda *_: _end_group(143))
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    watched: list[int] = []
    # Without pidfds (not Linux, or an old kernel) the loop below polls instead.
    with contextlib.suppress(AttributeError, OSError):
        watched = [os.pidfd_open(server), os.pidfd_open(child.pid)]
    parent = os.getppid()
    while True:
        if watched:
            select.select(watched, [], [], 5.0)
        else:
            time.sleep(0.25)
        code = child.poll()
        if code is not None:
            # The server quotes the last line of stderr when an upstream stops by itself.
            print(f"upstream_guard: {command[0]} exited with status {code}", file=sys.stderr)
            if _others_in_group():
                _end_group(code)
            return code
        # The server is the guard's parent: when it dies, even unreaped, the guard is
        # handed to another, and its pidfd has woken the select above at once.
        if os.getppid() != parent or parent != server:
            _end_group(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
