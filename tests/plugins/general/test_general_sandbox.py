"""Attacks on space_app_run_bash from inside, each of which the sandbox must stop.

These run the real bubblewrap: no mocks. Every attack is made through the tool
as a model would make it, by a command, and then checked from the host.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from host_processes import sleepers, sleepers_after

import agent_presets_general
from agent_presets import ToolCallError
from agent_presets_general import SpaceHost
from agent_presets_general.bash import BashRunner
from agent_presets_general.sandbox import ShellOptions

if TYPE_CHECKING:
    from conftest import GeneralApp


@pytest.fixture
def app(powered_app: GeneralApp) -> GeneralApp:
    """The general plugin with the shell on, and a sandbox that works (``powered_app`` skips
    where it does not)."""
    assert powered_app.host.bash.status() == (True, "sandboxed by bubblewrap")
    return powered_app


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the file root with a secret in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("outside-secret")
    return folder


def run(app: GeneralApp, command: str, timeout: float = 10) -> dict[str, Any]:
    result: dict[str, Any] = app.call(
        "space_app_run_bash", command=command, timeout_seconds=timeout
    )
    return result


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on a loopback port of the host."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.5)
    yield server
    server.close()


def test_a_command_cannot_write_outside_the_file_root(app: GeneralApp, outside: Path) -> None:
    name = f"sandbox-escape-{uuid.uuid4().hex}"
    refused = [outside / name, app.state_dir / name, Path("/usr") / name, Path("/") / name]
    private = Path("/tmp") / name  # the sandbox's own /tmp, gone after the call
    command = "; ".join(f"echo pwned > {shlex.quote(str(t))}" for t in [*refused, private])
    result = run(app, f"{command}; cat {private}; echo inside > {name}")
    assert not any(target.exists() for target in [*refused, private])
    assert result["stdout"] == "pwned\n"
    assert (app.root / name).read_text() == "inside\n", "the root itself must stay writable"
    stderr = str(result["stderr"])
    assert stderr.count("No such file or directory") == 2
    assert stderr.count("Read-only file system") == 2


def test_a_command_cannot_read_the_state_directory_or_files_outside_the_root(
    app: GeneralApp, outside: Path
) -> None:
    (app.state_dir / "token").write_text("state-secret")
    result = run(
        app,
        f"cat {shlex.quote(str(app.state_dir / 'token'))}; "
        f"cat {shlex.quote(str(outside / 'secret.txt'))}; "
        f"ls {shlex.quote(str(app.state_dir))} {shlex.quote(str(outside))}; "
        "ls /home /root /etc/shadow /run /var /sys /mnt",
    )
    text = f"{result['stdout']}{result['stderr']}"
    assert "state-secret" not in text
    assert "outside-secret" not in text
    assert result["stdout"] == ""
    assert text.count("No such file or directory") == 11


def test_remounting_the_file_system_read_write_fails(app: GeneralApp) -> None:
    name = f"sandbox-escape-{uuid.uuid4().hex}"
    attempts = [
        "mount -o remount,rw /",
        "mount -o remount,bind,rw /usr",
        "mount --bind /tmp /usr",
        "mount -t tmpfs none /mnt",
    ]
    result = run(
        app,
        "".join(f"{attempt} 2>/dev/null; echo $?; " for attempt in attempts)
        + f"touch /usr/{name} /{name}",
    )
    assert "0" not in result["stdout"].split(), "a mount succeeded inside the sandbox"
    assert result["stderr"].count("Read-only file system") == 2
    assert not (Path("/usr") / name).exists()


def test_a_unix_socket_in_the_state_directory_cannot_be_reached(app: GeneralApp) -> None:
    path = app.state_dir / "c.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(5)
    server.setblocking(False)
    connect = (
        "python3 -c 'import socket, sys\n"
        'try:\n socket.socket(socket.AF_UNIX).connect(sys.argv[1]); print("connected")\n'
        "except OSError as e: print(type(e).__name__)' "
    ) + shlex.quote(str(path))
    try:
        # The same command, unconfined, does connect: the attack itself works.
        unconfined = BashRunner(app.root, bwrap="/bin/false", unsafe_shell=True)
        assert unconfined.run(connect)["stdout"] == "connected\n"
        server.accept()[0].close()

        result = run(app, connect)
        assert result["stdout"] == "FileNotFoundError\n"
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_the_server_environment_cannot_be_read(
    shell_sandbox: None,
    make_general_app: Callable[..., GeneralApp],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = f"server-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("PRESETS_TEST_SECRET", secret)
    app = make_general_app()
    app.enable("general-shell-tools")
    result = run(
        app,
        "env; cat /proc/1/environ /proc/$PPID/environ; "
        "for f in /proc/[0-9]*/environ; do cat $f; done; echo",
    )
    assert secret not in f"{result['stdout']}{result['stderr']}"
    names = {line.split("=", 1)[0] for line in result["stdout"].splitlines() if "=" in line}
    assert {"PATH", "HOME", "LANG"} <= names
    assert "PRESETS_TEST_SECRET" not in result["stdout"]


def test_a_process_started_by_a_command_does_not_outlive_the_call(app: GeneralApp) -> None:
    marker = f"{uuid.uuid4().int % 10**6}"
    result = run(
        app,
        f"setsid -f sleep 300.{marker}; nohup sleep 301.{marker} >/dev/null 2>&1 & "
        f"(trap '' HUP TERM; exec sleep 302.{marker}) & disown; echo started",
    )
    assert result["stdout"] == "started\n"
    assert result["exit_code"] == 0
    assert sleepers(f".{marker}") == []


def test_a_process_started_by_a_command_does_not_outlive_its_timeout(app: GeneralApp) -> None:
    marker = f"{uuid.uuid4().int % 10**6}"
    result = run(app, f"setsid -f sleep 300.{marker}; sleep 30.{marker}", timeout=0.5)
    assert result["timed_out"] is True
    assert result["exit_code"] == -9
    assert sleepers(f".{marker}") == []


def test_a_process_started_by_a_command_does_not_outlive_a_killed_server(
    shell_sandbox: None, tmp_path: Path
) -> None:
    marker = f"{uuid.uuid4().int % 10**6}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from agent_presets_general.bash import BashRunner; "
            "BashRunner(sys.argv[1]).run(sys.argv[2], 60)",
            str(tmp_path),
            f"setsid -f sleep 300.{marker}; sleep 301.{marker}",
        ]
    )
    try:
        deadline = time.monotonic() + 10
        while len(sleepers(f".{marker}")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sleepers(f".{marker}")) == 2, "the command did not start"
    finally:
        server.kill()
        server.wait()
    assert sleepers_after(f".{marker}") == []


def test_network_is_unreachable_by_default(app: GeneralApp, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    result = run(app, f"echo hello > /dev/tcp/127.0.0.1/{port}")
    assert result["exit_code"] != 0
    assert "Connection refused" in result["stderr"]
    with pytest.raises(TimeoutError):
        listener.accept()


def test_network_is_reachable_with_shell_network(
    shell_sandbox: None, tmp_path: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    runner = BashRunner(tmp_path / "files", shell_network=True)
    assert runner.status() == (True, "sandboxed by bubblewrap")
    result = runner.run(f"echo hello > /dev/tcp/127.0.0.1/{port}")
    assert result["exit_code"] == 0, result["stderr"]
    connection, _ = listener.accept()
    with connection:
        assert connection.recv(100) == b"hello\n"


def test_shell_env_passes_exactly_the_listed_names(
    shell_sandbox: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRESETS_LISTED", "listed-value")
    monkeypatch.setenv("PRESETS_UNLISTED", "unlisted-value")
    listed = ShellOptions(shell_env=("PRESETS_LISTED", "PRESETS_ABSENT"))
    host = SpaceHost(tmp_path / "state", root=tmp_path / "files", serve_options=[listed])
    host.start(plugins=[agent_presets_general])
    result = host.bash.run("env")
    env = dict(line.split("=", 1) for line in result["stdout"].splitlines())
    assert env["PRESETS_LISTED"] == "listed-value"
    assert env["HOME"] == str(host.root)
    assert env["LANG"] == "C.UTF-8"
    assert set(env) == {"PATH", "HOME", "LANG", "PRESETS_LISTED", "PWD", "SHLVL", "_"}


def test_a_sandbox_that_fails_its_trial_run_refuses_every_command(tmp_path: Path) -> None:
    runner = BashRunner(tmp_path, bwrap="/bin/false")
    ok, why = runner.status()
    assert not ok
    assert "trial run of /bin/false failed" in why
    with pytest.raises(ToolCallError) as refused:
        runner.run("touch ran")
    message = str(refused.value)
    assert "the Debian/Ubuntu package 'bubblewrap'" in message
    assert "--unsafe-shell" in message
    assert not (tmp_path / "ran").exists()


def test_a_missing_bubblewrap_refuses_every_command(tmp_path: Path) -> None:
    runner = BashRunner(tmp_path, bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(ToolCallError, match=r"could not start .*bubblewrap"):
        runner.run("true")


def test_unsafe_shell_runs_unconfined_only_where_the_sandbox_fails(
    shell_sandbox: None, tmp_path: Path
) -> None:
    unconfined = BashRunner(tmp_path, bwrap="/bin/false", unsafe_shell=True)
    assert unconfined.status() == (
        True,
        "unconfined: the sandbox does not work here and unsafe_shell is set",
    )
    assert unconfined.run("echo ran")["stdout"] == "ran\n"
    sandboxed = BashRunner(tmp_path, unsafe_shell=True)
    assert sandboxed.status() == (True, "sandboxed by bubblewrap")
    assert sandboxed.run("touch /usr/pwned")["exit_code"] != 0


def test_a_root_that_holds_system_folders_is_refused(shell_sandbox: None) -> None:
    with pytest.raises(ToolCallError, match="holds the system folder /usr"):
        BashRunner("/").run("touch /usr/pwned")


def test_shell_options_are_checked_when_the_host_hands_them_over() -> None:
    with pytest.raises(ValueError, match="unknown shell_netwrok"):
        ShellOptions.from_mapping({"shell_netwrok": True})
    with pytest.raises(ValueError, match="'A=B' is not an environment variable name"):
        ShellOptions.from_mapping({"shell_env": ["A=B"]})
    with pytest.raises(ValueError, match="a list of names, not the string 'TOKEN'"):
        ShellOptions.from_mapping({"shell_env": "TOKEN"})
    assert ShellOptions.from_mapping(None) == ShellOptions()
