"""The finding's own setup: `presets serve --on general-shell-tools`, and a model
that tries to write the host's sysctls through `space_app_run_bash`.

As root (CI, most containers) the sandbox's uid 0 is the host's root; the
commands only open the files for writing, never write, so a sandbox that lets
them through changes nothing on the host.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import serve_command, server_env

SYSCTLS = ("kernel/core_pattern", "kernel/hostname", "vm/drop_caches")


def _call_bash(tmp_path: Path, commands: list[str]) -> list[dict[str, Any]]:
    """Run each command through the tool of a served `general-shell-tools`, in order."""
    root = tmp_path / "root"
    root.mkdir()
    lines: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for number, command in enumerate(commands, 1):
        arguments = {"command": command, "timeout_seconds": 30}
        params = {"name": "space_app_run_bash", "arguments": arguments}
        lines.append({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
    state = str(tmp_path / "state")
    server = subprocess.Popen(
        serve_command("--state-dir", state, "--root", str(root), "--on", "general-shell-tools"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    assert server.stdin is not None and server.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    try:
        server.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        server.stdin.flush()
        # Read until every call is answered: closing stdin first would end the server.
        while len(answers) < len(commands) + 1:
            line = server.stdout.readline()
            assert line, f"the server ended early: {server.stderr.read() if server.stderr else ''}"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
    finally:
        server.kill()
        server.wait()
    results = []
    for number in range(1, len(commands) + 1):
        result = answers[number]["result"]
        assert result.get("isError") is not True, result
        text = "".join(part.get("text", "") for part in result["content"])
        results.append(result.get("structuredContent") or json.loads(text))
    return results


def test_a_served_shell_cannot_open_host_sysctls_or_anything_host_wide_in_proc(
    tmp_path: Path,
) -> None:
    readable = SYSCTLS[:2]  # drop_caches is write-only
    before = {name: Path("/proc/sys", name).read_text() for name in readable}
    probe = "; ".join(
        f"if (: >> /proc/sys/{name}) 2>/dev/null; then echo opened {name}; fi; "
        f"if test -w /proc/sys/{name}; then echo writable {name}; fi"
        for name in SYSCTLS
    )
    scan = (
        "find /proc \\( -regex '/proc/[0-9]+' -o -path /proc/self -o -path /proc/thread-self "
        "\\) -prune -o -writable -print 2>/dev/null; echo scanned"
    )
    probed, scanned = _call_bash(tmp_path, [f"{probe}; echo probed", scan])
    assert probed["stdout"] == "probed\n"
    assert scanned["stdout"] == "scanned\n"
    assert {name: Path("/proc/sys", name).read_text() for name in readable} == before


# In a user namespace of its own a command holds every capability there, and
# with the sandbox's uid 0 being the host's root, a cgroup file's owner check
# passes: mounting the pids hierarchy shows the sandbox's own cgroup, whose
# `pids.max` it could raise to `max`. A fresh tmpfs would have no size bound.
NESTED_MOUNTS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x00020000 | 0x02000000) != 0:  # user, mount, cgroup
    print("no user namespace")
    raise SystemExit
for fs, options in ((b"cgroup", b"pids"), (b"tmpfs", b"size=4g")):
    os.makedirs(b"/tmp/" + fs, exist_ok=True)
    if libc.mount(b"none", b"/tmp/" + fs, fs, 0, options) == 0:
        print("mounted", fs.decode())
try:
    with open("/tmp/cgroup/pids.max", "w") as limit:
        limit.write("max")
    print("raised pids.max")
except OSError:
    pass
"""


def test_a_served_shell_cannot_mount_in_a_user_namespace_of_its_own(tmp_path: Path) -> None:
    if not Path("/usr/bin/python3").exists():
        pytest.skip("the attack needs a system python3 inside the sandbox")
    root_script = "m.py"
    (result,) = _call_bash(
        tmp_path,
        [f"cat > {root_script} <<'PY'\n{NESTED_MOUNTS}\nPY\n/usr/bin/python3 {root_script}"],
    )
    assert result["stdout"] == "no user namespace\n", result


SHARED_MEMORY = """
import mmap
size = 1280 * 1024 * 1024  # past the 1 GiB a process may take
try:
    area = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    for page in range(0, size, mmap.PAGESIZE):
        area[page] = 1
    print("took", size >> 20, "MiB")
except (MemoryError, OSError):
    print("refused")
"""


@pytest.mark.xfail(
    strict=True,
    reason="RLIMIT_DATA counts private writable mappings only: a shared anonymous one "
    "(shmem) is not bounded; it needs a memory cgroup for the sandbox (or RLIMIT_AS)",
)
def test_a_served_shell_cannot_take_more_memory_through_a_shared_mapping(
    tmp_path: Path,
) -> None:
    if not Path("/usr/bin/python3").exists():
        pytest.skip("the attack needs a system python3 inside the sandbox")
    (result,) = _call_bash(
        tmp_path, [f"cat > shm.py <<'PY'\n{SHARED_MEMORY}\nPY\n/usr/bin/python3 shm.py"]
    )
    assert result["stdout"] == "refused\n", result
