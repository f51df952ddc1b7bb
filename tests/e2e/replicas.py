"""A deployment for the replica tests and benches: redis-server, N replicas, nginx in front.

Every process runs from the test's own directory on free loopback ports, and
is stopped by its PID:

- ``RedisServer`` (tests/e2e/redisserver.py): ``redis-server`` with its
  append-only file fsynced on every write (``appendfsync always``), so a
  restart keeps every acknowledged write;
- ``Replica``: ``presets serve --transport http --store redis://... --replica rN``,
  each with its own ``--state-dir``;
- ``Balancer``: nginx, with the routing ``routing_config`` renders: the
  configuration docs/replicas.md shows, and a test checks the two agree.

``deployment()`` starts all three and stops them in reverse.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .conftest import BANNER_TIMEOUT, port_of, serve_command, server_env, spawn_http, terminate
from .redisserver import RedisServer

START_TIMEOUT = 30.0


def free_port() -> int:
    """A loopback port nothing listens on now (the OS's pick; a process binds it just after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[Any], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} in {START_TIMEOUT} s")


def presets_command(*args: str) -> list[str]:
    """``presets ARGS``: the executable ``presets serve`` runs, another subcommand."""
    return [*serve_command()[:-1], *args]


def presets(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run one ``presets`` command as an operator would, in its own process."""
    return subprocess.run(
        presets_command(*args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=timeout,
    )


class Replica:
    """One ``presets serve --transport http --store URL --replica NAME`` on a free port."""

    def __init__(self, name: str, state_dir: Path, store: str | None, *extra: str) -> None:
        self.name = name
        self.state_dir = state_dir
        command = serve_command(
            "--transport", "http", "--host", "127.0.0.1", "--port", "0",
            "--state-dir", str(state_dir), "--replica", name,
            *(("--store", store) if store is not None else ()), *extra,
        )  # fmt: skip
        self.process, self.url, self.stderr = spawn_http(command, BANNER_TIMEOUT)
        self.port = port_of(self.url)

    def kill(self) -> None:
        """``kill -9``: the replica dies mid-request, as a crashed machine's would."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        terminate(self.process)

    def tracebacks(self) -> str:
        """What it printed, when that holds a traceback (else '')."""
        text = "".join(self.stderr)
        return text if "Traceback" in text else ""


@dataclass(frozen=True)
class Upstream:
    name: str
    address: str  # host:port


def routing_config(listen: str, upstreams: Sequence[Upstream]) -> str:
    """nginx's ``http`` block content for ``upstreams`` behind ``listen`` (docs/replicas.md).

    Requests without a session id go round-robin; a legacy session's id starts
    with its replica's name and a dot, and goes back to that replica. A session
    whose replica is gone gets 404, which tells a client to start a new one.
    """
    servers = "".join(f"    server {u.address} max_fails=1 fail_timeout=2s;\n" for u in upstreams)
    pinned = "".join(
        f"upstream presets_{u.name} {{\n    server {u.address};\n    keepalive 16;\n}}\n"
        for u in upstreams
    )
    routes = "".join(f"    ~^{u.name}\\.  presets_{u.name};\n" for u in upstreams)
    return (
        "# Any replica serves a request without a session id (2026-07-28, and initialize).\n"
        "upstream presets_any {\n"
        f"{servers}"
        "    keepalive 32;\n"
        "}\n"
        "# One group per replica, for the legacy sessions it opened.\n"
        f"{pinned}"
        "# A 2025-11-25 session id is NAME.HEX: back to replica NAME.\n"
        "map $http_mcp_session_id $presets_upstream {\n"
        "    default  presets_any;\n"
        f"{routes}"
        "}\n"
        "server {\n"
        f"    listen {listen};\n"
        "    location /mcp {\n"
        "        proxy_pass http://$presets_upstream;\n"
        "        # Keep-alive to the replicas, and streams that flow as they are written.\n"
        "        proxy_http_version 1.1;\n"
        '        proxy_set_header Connection "";\n'
        "        proxy_buffering off;\n"
        "        proxy_request_buffering off;\n"
        "        proxy_cache off;\n"
        "        # subscriptions/listen and a session's GET stream stay open for long.\n"
        "        proxy_read_timeout 1h;\n"
        "        proxy_send_timeout 1h;\n"
        "        # Every request header passes as sent (Authorization, Mcp-Session-Id,\n"
        "        # Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, Origin);\n"
        "        # only Host is the replica's own loopback name, which it checks.\n"
        "        proxy_set_header Host 127.0.0.1:$server_port;\n"
        "        client_max_body_size 4m;\n"
        "        # A replica that refuses the connection: the request goes to the next one.\n"
        "        # A request already sent is never sent twice (POST is not idempotent).\n"
        "        proxy_next_upstream error timeout;\n"
        "        proxy_connect_timeout 2s;\n"
        "        error_page 502 504 = @replica_gone;\n"
        "    }\n"
        "    location @replica_gone {\n"
        "        default_type application/json;\n"
        "        # The session lived in the replica's memory: the client must open a new one.\n"
        "        if ($http_mcp_session_id) {\n"
        '            return 404 \'{"jsonrpc":"2.0","id":null,'
        '"error":{"code":-32600,"message":"Session not found"}}\';\n'
        "        }\n"
        '        return 503 \'{"jsonrpc":"2.0","id":null,'
        '"error":{"code":-32603,"message":"no replica answered; retry"}}\';\n'
        "    }\n"
        "}\n"
    )


def process_config(prefix: Path, routing: str) -> str:
    """The whole nginx.conf for an unprivileged nginx under ``prefix``: no path outside it."""
    indented = "".join(f"    {line}\n" if line else "\n" for line in routing.splitlines())
    # As root, nginx's workers would run as nobody, who cannot enter a test's directory.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}"
        "worker_processes 1;\n"
        f"pid {prefix / 'nginx.pid'};\n"
        "error_log stderr warn;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        "    access_log off;\n"
        f"    client_body_temp_path {prefix / 'body'};\n"
        f"    proxy_temp_path {prefix / 'proxy'};\n"
        f"    fastcgi_temp_path {prefix / 'fastcgi'};\n"
        f"    uwsgi_temp_path {prefix / 'uwsgi'};\n"
        f"    scgi_temp_path {prefix / 'scgi'};\n"
        f"{indented}"
        "}\n"
    )


class Balancer:
    """nginx in the foreground on a free loopback port, round-robin over ``replicas``."""

    def __init__(self, prefix: Path, replicas: Sequence[Replica]) -> None:
        nginx = shutil.which("nginx") or next(
            (p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None
        )
        if nginx is None:
            raise RuntimeError("nginx is missing: install the Debian package nginx")
        prefix.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.port = free_port()
        upstreams = [Upstream(r.name, f"127.0.0.1:{r.port}") for r in replicas]
        conf = prefix / "nginx.conf"
        conf.write_text(process_config(prefix, routing_config(f"127.0.0.1:{self.port}", upstreams)))
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process = subprocess.Popen(
            # -e: nginx's own log before it reads the config; no path outside the prefix.
            [nginx, "-p", str(prefix), "-e", "stderr", "-c", str(conf), "-g", "daemon off;"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(prefix / "stderr.log", "wb"),  # noqa: SIM115 - closed with the process
        )
        try:
            wait_listening(self.port, self.process, "nginx")
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}:\n{self.log()}") from None

    def log(self) -> str:
        return (self.prefix / "stderr.log").read_text(errors="replace")

    def stop(self) -> None:
        # SIGTERM is nginx's fast shutdown; SIGQUIT would wait for the open streams.
        terminate(self.process)


class Deployment:
    """redis-server, ``count`` replicas (``r1``, ``r2`` ...) on it, and nginx in front."""

    def __init__(self, root: Path, count: int, *extra: str, store: bool = True) -> None:
        self.root = root
        self.redis: RedisServer | None = None
        self.replicas: list[Replica] = []
        self.balancer: Balancer | None = None
        try:
            if store:
                if shutil.which("redis-server") is None:
                    raise RuntimeError("redis-server is missing: install the package redis-server")
                self.redis = RedisServer(root / "redis")
                self.redis.start()
            for n in range(1, count + 1):
                self.replicas.append(Replica(f"r{n}", root / f"state-r{n}", self.store_url, *extra))
            self.balancer = Balancer(root / "nginx", self.replicas)
        except BaseException:
            self.close()
            raise

    @property
    def store_url(self) -> str | None:
        return self.redis.url if self.redis is not None else None

    @property
    def url(self) -> str:
        assert self.balancer is not None
        return self.balancer.url

    def presets(self, *args: str) -> subprocess.CompletedProcess[str]:
        """An operator command against the deployment's store (``--store URL``)."""
        assert self.store_url is not None
        return presets(*args, "--store", self.store_url)

    def tracebacks(self) -> str:
        return "".join(r.tracebacks() for r in self.replicas)

    def close(self) -> None:
        if self.balancer is not None:
            self.balancer.stop()
        for replica in self.replicas:
            replica.stop()
        if self.redis is not None:
            self.redis.stop()


@contextlib.contextmanager
def deployment(root: Path, count: int = 2, *extra: str, store: bool = True) -> Iterator[Deployment]:
    running = Deployment(root, count, *extra, store=store)
    try:
        yield running
    finally:
        running.close()
