"""A real ``redis-server`` for the tests: on a free loopback port, with AOF on, stopped by PID.

``redis_server`` (a fixture, imported by ``conftest.py``) starts one per test
with ``--appendonly yes --appendfsync always`` in a temporary folder and yields
a ``RedisServer``: its ``url``, and ``stop()`` / ``start()`` to take the same
server (same port, same folder, so the same data) away and bring it back mid-test.
Tests that need it are skipped where ``redis-server`` is not installed
(``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ping(port: int) -> bool:
    """Whether a Redis answers PING on ``port`` (a raw RESP exchange: no client needed)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``stop`` and ``start`` keep its port and its folder."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is not installed"
        self.folder.mkdir(parents=True, exist_ok=True)
        log = (self.folder / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [
                binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.folder),
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--save", "",
                "--daemonize", "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not ping(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"redis-server exited ({self.process.returncode}): "
                    + (self.folder / "redis.log").read_text(errors="replace")[-2000:]
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer PING on {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """SIGTERM (Redis writes what it has, then exits), then SIGKILL; by its PID only."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(5)

    def kill(self) -> None:
        """SIGKILL: a crash, as far as Redis can tell (what AOF fsynced survives)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(5)

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
