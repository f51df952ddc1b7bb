"""A real ``redis-server`` for the runtime-table tests: a free loopback port, stopped by PID.

Started with the settings ``docs/store.md`` gives for keeping acknowledged
writes (``appendonly yes``, ``appendfsync always``), in a folder of the test's
own, so ``stop()`` and ``start()`` again model a Redis restart that keeps
everything it acknowledged.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process; ``url`` names database 0 of it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (Debian package redis-server)")
        self.process = subprocess.Popen(
            [
                *(binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--appendonly", "yes", "--appendfsync", "always"),
                *("--dir", str(self.folder), "--save", "", "--protected-mode", "yes"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def flush(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as conn:
            conn.sendall(b"FLUSHALL\r\n")
            assert conn.recv(16).startswith(b"+OK")

    def stop(self) -> None:
        """End the process we started, by its PID: SIGTERM, then SIGKILL."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
