"""Attacks on the host as a whole from inside the shell sandbox, and its limits.

Run as root (as CI and most containers do), the sandbox's uid 0 is the host's
root: the kernel decides who may write a sysctl by the file's mode and that
uid, not by capabilities, so a writable ``/proc/sys`` would hand the command
the host (``kernel/core_pattern`` runs a program as real root on the next
crash). The attacks here only ever *open* a host-wide file for writing, never
write to one, so a sandbox that fails them changes nothing on the host.

These run the real bubblewrap, through the tool, as the other sandbox tests do.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agent_presets_general.sandbox import sandbox_status

if TYPE_CHECKING:
    from conftest import GeneralApp

pytestmark = pytest.mark.slow

# Host-wide sysctls, each of which a root writer could abuse: the crash helper
# run as real root, the host name, the page cache of every process.
SYSCTLS = ("kernel/core_pattern", "kernel/hostname", "vm/drop_caches")
READABLE = SYSCTLS[:2]  # drop_caches is write-only (mode 0200)


@pytest.fixture
def app(powered_app: GeneralApp) -> GeneralApp:
    ok, why = sandbox_status()
    if not ok:
        pytest.fail(f"these tests need a working sandbox: {why}")
    assert powered_app.host.bash.status() == (True, "sandboxed by bubblewrap")
    return powered_app


def run(app: GeneralApp, command: str, timeout: float = 30) -> dict[str, Any]:
    result: dict[str, Any] = app.call(
        "space_app_run_bash", command=command, timeout_seconds=timeout
    )
    return result


def test_host_wide_sysctls_cannot_be_opened_for_writing(app: GeneralApp) -> None:
    before = {name: Path("/proc/sys", name).read_text() for name in READABLE}
    # `: >> file` opens the file for appending and closes it without writing a
    # byte; `test -w` asks the kernel's access check. Either saying yes is the
    # hole, and neither changes a value.
    probes = "; ".join(
        f"if (: >> {shlex.quote(path)}) 2>/dev/null; then echo opened {path}; fi; "
        f"if test -w {shlex.quote(path)}; then echo writable {path}; fi"
        for path in (f"/proc/sys/{name}" for name in SYSCTLS)
    )
    result = run(app, f"{probes}; cat /proc/sys/kernel/core_pattern")
    assert result["exit_code"] == 0, result["stderr"]
    lines = result["stdout"].splitlines()
    assert [line for line in lines if line.startswith(("opened", "writable"))] == []
    assert lines == [before["kernel/core_pattern"].rstrip("\n")], "the sysctl must stay readable"
    assert {name: Path("/proc/sys", name).read_text() for name in READABLE} == before


def test_nothing_under_proc_is_writable_but_the_sandboxs_own_processes(app: GeneralApp) -> None:
    # Every writable path in the sandbox's /proc, its per-process folders
    # (/proc/<pid>, self, thread-self) aside; `find -writable` asks access(2).
    result = run(
        app,
        "find /proc \\( -regex '/proc/[0-9]+' -o -path /proc/self -o -path /proc/thread-self "
        "\\) -prune -o -writable -print 2>/dev/null; echo scanned",
    )
    assert result["stdout"].splitlines() == ["scanned"]


REMOUNT = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
# A user and mount namespace of its own: every capability, over its own mounts.
assert libc.unshare(0x10000000 | 0x00020000) == 0, os.strerror(ctypes.get_errno())
MS_BIND, MS_REMOUNT, MS_REC = 4096, 32, 16384
done = [
    libc.mount(b"proc", b"/tmp", b"proc", 0, None) == 0,
    libc.mount(None, b"/proc", None, MS_BIND | MS_REMOUNT, None) == 0,
    libc.mount(b"/proc", b"/tmp", None, MS_BIND | MS_REC, None) == 0
    and libc.mount(None, b"/tmp", None, MS_BIND | MS_REMOUNT, None) == 0,
]
print(done, os.access("/proc/sys/kernel/core_pattern", os.W_OK),
      os.access("/tmp/sys/kernel/core_pattern", os.W_OK))
"""


def test_a_nested_user_namespace_cannot_make_proc_writable_again(app: GeneralApp) -> None:
    # Inside a user namespace of its own the command holds CAP_SYS_ADMIN over
    # its mounts, and its kernel uid is still the host's root: a fresh proc, a
    # read-write remount or a bind remounted read-write would each do.
    (app.root / "remount.py").write_text(REMOUNT)
    result = run(app, "python3 remount.py")
    assert result["exit_code"] == 0, result["stderr"]
    assert result["stdout"].split() == ["[False,", "False,", "False]", "False", "False"]
