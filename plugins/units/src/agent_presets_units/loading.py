"""Where a unit's code runs: a fresh Python process, sandboxed when the sandbox works.

A unit is agent-written code. Run in the server, it could reach every object
there (the ``Controller`` that approves requests, the tool policy, the state
database) and everything the server's user can write. So each load is a new
interpreter of its own (``loadproc``), run under the general plugin's
bubblewrap sandbox with the same flags as a shell command: the file root is
its only writable folder, the state directory does not exist inside, there is
no network, and every process it starts dies with it. The interpreter's own
installation is bound read-only so that it can start; it runs with ``-I -S``,
so it imports the standard library and nothing installed for the server.

Where the sandbox does not work every load is refused, with the shell's
message, unless the operator chose ``--unsafe-shell``: then the load process
runs unconfined, but still a process of its own with a fixed environment, so
it still cannot touch the server's objects or memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Final

from agent_presets import ToolCallError
from agent_presets_general.bash import PipeCapture
from agent_presets_general.sandbox import (
    SYSTEM_DIRS,
    PidsCgroup,
    SandboxLimits,
    bwrap_args,
    find_bwrap,
    limited_command,
    root_problem,
    sandbox_env,
    sandbox_status,
    start_sandbox_trial,
)

LOAD_TIMEOUT: Final = 30.0
REPORT_CAP: Final = 1024 * 1024
STDERR_CAP: Final = 16 * 1024
TEXT_CAP: Final = 16 * 1024  # any one string of a report
MAX_DEFINES: Final = 10_000
# How long to wait for the pipes to close after the process is gone: an
# unconfined unit may leave a child holding them.
DRAIN_GRACE: Final = 2.0
PROGRAM: Final = (resources.files(__package__) / "loadproc.py").read_text(encoding="utf-8")


class UnitLoader:
    """Runs one load process per reload and returns the report it made.

    Like the shell runner, how loads run is settled once (by the cached trial
    run of bubblewrap) and never changes: every load is sandboxed, every load
    is refused, or (only with ``unsafe`` where the sandbox does not work) every
    load runs unconfined.

    ``root`` is the load's only writable folder and its working folder; None
    gives each load an empty temporary folder of its own.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        unsafe: bool = False,
        bwrap: str | None = None,
        timeout: float = LOAD_TIMEOUT,
        limits: SandboxLimits | None = None,
    ) -> None:
        self.root = Path(root).resolve() if root is not None else None
        self.unsafe = unsafe
        self.bwrap = bwrap or find_bwrap()
        self.timeout = timeout
        # A load is held to a shell command's limits: processes, memory, file size.
        self.limits = limits if limits is not None else SandboxLimits()
        start_sandbox_trial(self.bwrap)

    @cached_property
    def _settled(self) -> tuple[bool, str | None]:
        """``(sandboxed, why every load is refused or None)``."""
        ok, why = sandbox_status(self.bwrap)
        if ok:
            return True, root_problem(self.root) if self.root is not None else None
        return False, None if self.unsafe else why

    @property
    def sandboxed(self) -> bool:
        return self._settled[0]

    def status(self) -> tuple[bool, str]:
        """``(True, how units load)`` or ``(False, why every load is refused)``."""
        sandboxed, refusal = self._settled
        if refusal is not None:
            return False, refusal
        if sandboxed:
            return True, "in a fresh Python process sandboxed by bubblewrap"
        return True, "in a fresh Python process, unconfined: the sandbox does not work here"

    def load(self, name: str, path: Path, data: bytes) -> dict[str, Any]:
        """Run the unit in a process of its own: ``{"state": ..., "defines"|"error": ...}``."""
        sandboxed, refusal = self._settled
        if refusal is not None:
            raise ToolCallError(
                f"{refusal}. Units are not loaded until then (with --unsafe-shell they load "
                "unconfined, in a process of their own); tell the user, since only the "
                "operator of this server can change it."
            )
        with self._root() as root:
            python, binds = _python()
            command = [python, "-I", "-S", "-c", PROGRAM, name, str(path)]
            if not sandboxed:
                return self._run(command, root, data, sandboxed)
            assert self.bwrap is not None
            sandbox = _with_binds(bwrap_args(self.bwrap, root, limits=self.limits), binds)
            command = [*sandbox, *limited_command(shlex.join(command), self.limits)]
            # As the host's root RLIMIT_NPROC does not hold: a pids cgroup caps a fork loop.
            cgroup = PidsCgroup.make(self.limits.processes)
            if cgroup is not None:
                command = cgroup.join_argv(command)
            try:
                return self._run(command, root, data, sandboxed)
            finally:
                if cgroup is not None:
                    cgroup.remove(DRAIN_GRACE)

    @contextlib.contextmanager
    def _root(self) -> Iterator[Path]:
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            yield self.root
            return
        with tempfile.TemporaryDirectory(prefix="presets-unit-load-") as folder:
            yield Path(folder).resolve()

    def _run(self, command: list[str], root: Path, data: bytes, sandboxed: bool) -> dict[str, Any]:
        try:
            proc = subprocess.Popen(
                command,
                cwd=root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                # Sandboxed or not, the load gets the fixed environment, never the server's.
                env=sandbox_env(root, ()),
            )
        except OSError as exc:
            raise ToolCallError(f"the unit's load process could not start: {exc}") from None
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out = PipeCapture(proc.stdout, REPORT_CAP)
        err = PipeCapture(proc.stderr, STDERR_CAP)
        out.start()
        err.start()
        with contextlib.suppress(BrokenPipeError):  # a unit that exits before reading it
            proc.stdin.write(data)
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        try:
            proc.wait(self.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Sandboxed, killing bubblewrap kills everything in its PID namespace;
            # unconfined, the session's group is what the load started.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.join(DRAIN_GRACE)
        err.join(DRAIN_GRACE)
        if timed_out:
            return _failed(
                "TimeoutError",
                f"the unit did not finish loading within {self.timeout:g} s, so its load "
                "process was stopped; top-level code must return (put long work in functions)",
            )
        report = _checked(bytes(out.data)) if not out.dropped else None
        if report is None:
            said = bytes(err.data).decode("utf-8", errors="replace").strip().splitlines()
            last = f"; its last output: {said[-1][:300]}" if said else ""
            return _failed(
                "LoadProcessError",
                f"the unit's load process {_ending(proc.returncode, sandboxed)} without "
                f"reporting how the load went (os._exit, a signal or a crash){last}",
            )
        return report


def _python() -> tuple[str, list[str]]:
    """The interpreter a load runs (the server's, without its virtual environment)
    and the folders the sandbox must bind for it: its installation, unless that
    is a system folder the sandbox has already.
    """
    executable = getattr(sys, "_base_executable", None) or sys.executable
    prefixes = dict.fromkeys((sys.base_prefix, sys.base_exec_prefix))
    binds = [p for p in prefixes if not any(Path(p).is_relative_to(s) for s in SYSTEM_DIRS)]
    return executable, binds


def _with_binds(sandbox: list[str], folders: list[str]) -> list[str]:
    """``sandbox`` with each folder bound read-only, before ``/`` is made read-only.

    bubblewrap creates a bind's mount point in the sandbox's ``/``, so the binds
    must come before the final ``--remount-ro /``.
    """
    binds = [arg for folder in folders for arg in ("--ro-bind", folder, folder)]
    for i in range(len(sandbox) - 1, 0, -1):
        if sandbox[i - 1 : i + 1] == ["--remount-ro", "/"]:
            return [*sandbox[: i - 1], *binds, *sandbox[i - 1 :]]
    return [*sandbox, *binds]


def _ending(code: int, sandboxed: bool) -> str:
    """How a process ended; bubblewrap reports its child's death by signal N as 128 + N."""
    number = -code if code < 0 else code - 128 if sandboxed and code > 128 else 0
    try:
        name = signal.Signals(number).name if number else None
    except ValueError:
        name = None
    return f"was killed by {name}" if name else f"ended with exit code {code}"


def _failed(kind: str, message: str) -> dict[str, Any]:
    return {
        "state": "error",
        "error": {"type": kind, "message": message, "line": None, "traceback": None},
    }


def _checked(raw: bytes) -> dict[str, Any] | None:
    """The load process's report in the shape the tool promises, or None.

    The report comes from the unit's own process, so it is data to check, not
    to trust: a unit may write anything there.
    """
    try:
        report = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(report, dict):
        return None
    if report.get("state") == "loaded":
        defines = report.get("defines")
        if not isinstance(defines, list) or not all(isinstance(d, str) for d in defines):
            return None
        return {"state": "loaded", "defines": [_text(d) for d in defines[:MAX_DEFINES]]}
    error = report.get("error")
    if report.get("state") != "error" or not isinstance(error, dict):
        return None
    kinds = {"type": str, "message": str, "line": int, "column": int, "text": str, "traceback": str}
    checked: dict[str, Any] = {}
    for key, kind in kinds.items():
        if key not in error:
            if key in ("type", "message", "line"):
                return None
            continue
        value = error[key]
        if value is None and key not in ("type", "message"):
            checked[key] = None
        elif isinstance(value, kind) and not isinstance(value, bool):
            checked[key] = _text(value) if isinstance(value, str) else value
        else:
            return None
    return {"state": "error", "error": checked}


def _text(value: str) -> str:
    """At most ``TEXT_CAP`` characters, and text MCP can carry (no lone surrogates)."""
    return value[:TEXT_CAP].encode("utf-8", errors="replace").decode("utf-8")
