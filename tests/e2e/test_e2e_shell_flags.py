"""The shell sandbox's operator flags on `presets serve`, and `presets opencode --write`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import serve_command, server_env

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def _serve(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run serve, list its tools once (answer by answer, as a client does), then close stdin."""
    env = server_env()
    if path is not None:
        env["PATH"] = path
    command = serve_command("--state-dir", str(tmp_path / "state"), *args)
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    out: list[str] = []
    try:
        proc.stdin.write(json.dumps(INIT) + "\n")
        proc.stdin.flush()
        first = proc.stdout.readline()
        if first:
            out.append(first)
            for line in (
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            ):
                proc.stdin.write(json.dumps(line) + "\n")
            proc.stdin.flush()
            out.append(proc.stdout.readline())
        proc.stdin.close()
        proc.wait(timeout=120)
        rest, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(command, proc.returncode, "".join(out) + rest, err)


def _tool_names(stdout: str) -> list[str]:
    for line in stdout.splitlines():
        message = json.loads(line)
        if message.get("id") == 2:
            return [tool["name"] for tool in message["result"]["tools"]]
    raise AssertionError(f"no tools/list answer in {stdout!r}")


def test_the_shell_preset_is_refused_where_bubblewrap_does_not_work(tmp_path: Path) -> None:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    proc = _serve(tmp_path, "--on", "general-shell-tools", path=str(empty))
    assert proc.returncode == 1, proc.stderr
    assert "preset 'general-shell-tools' cannot be turned on" in proc.stderr
    assert "bubblewrap" in proc.stderr and "--unsafe-shell" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unsafe_shell_lets_the_operator_turn_it_on_without_the_sandbox(tmp_path: Path) -> None:
    empty = tmp_path / "no-bwrap-here"
    empty.mkdir()
    proc = _serve(tmp_path, "--on", "general-shell-tools", "--unsafe-shell", path=str(empty))
    assert proc.returncode == 0, proc.stderr
    assert "space_app_run_bash" in _tool_names(proc.stdout)


def test_the_shell_preset_turns_on_where_the_sandbox_works(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--on", "general-shell-tools")
    assert proc.returncode == 0, proc.stderr
    assert "space_app_run_bash" in _tool_names(proc.stdout)


def test_shell_env_names_only_what_the_shell_receives(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "--shell-env", "1BAD")
    assert proc.returncode == 2
    assert "'1BAD' is not an environment variable name" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "state").exists()  # refused before any state was touched


def test_opencode_write_gives_each_config_its_own_state_dir(tmp_path: Path) -> None:
    configs = []
    for window in ("one", "two"):
        proc = subprocess.run(
            [sys.executable, "-m", "agent_presets", "opencode", "--write", str(tmp_path / window)],
            capture_output=True,
            text=True,
            env={**os.environ},
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        config = json.loads((tmp_path / window / "opencode.json").read_text())
        command = config["mcp"]["presets"]["command"]
        configs.append(Path(command[command.index("--state-dir") + 1]))
    assert configs == [
        (tmp_path / "one" / "state").resolve(),
        (tmp_path / "two" / "state").resolve(),
    ]
