"""Run a bash command in the file root, sandboxed, bounded in time and output.

Each command runs under bubblewrap (see ``sandbox``): the file root is the only
path it can write, it sees no more of the host than system directories, and it
gets a fixed environment. Its processes live in a PID namespace of their own,
so when the call ends (or its time is up) killing the sandbox's init kills
everything the command started, ``setsid`` or not. Where the sandbox does not
work the runner refuses to run anything, unless the operator chose
``unsafe_shell``; then the command runs unconfined in a process group of its
own, and only that group is killed.

Output is drained as it comes and only the first ``output_cap`` bytes of each
stream are kept, so a command that prints without end cannot fill memory.
A sandboxed command's processes, memory and files are limited
(``SandboxLimits``); its processes by a pids cgroup of its own where the
server may make one, else by ``RLIMIT_NPROC`` and the runner's own count.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import IO, Any, Final

from agent_presets import ToolCallError
from agent_presets_general.sandbox import (
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

DEFAULT_TIMEOUT: Final = 30.0
PROGRESS_EVERY: Final = 1.0
"""Seconds between progress reports while a command runs."""

Progress = Callable[[float, float | None, str | None], None]
"""``progress(done, total, message)``: what ``CallContext.progress`` is."""
MAX_TIMEOUT: Final = 120.0
OUTPUT_CAP: Final = 64 * 1024
MAX_COMMAND_BYTES: Final = 64 * 1024
# How long to wait for the output pipes to close after the group is killed; an
# unconfined process that escaped the group (setsid) may hold them open for ever.
DRAIN_GRACE: Final = 2.0
# How long to wait for a sandbox's init to die after it is killed.
TEARDOWN_GRACE: Final = 2.0
# How often the process count is checked where no pids cgroup caps it.
WATCH_EVERY: Final = 0.005


class BashRunner:
    """The runtime behind ``space_app_run_bash``.

    Whether commands run sandboxed is settled once, by a cached trial run of
    bubblewrap started when the runner is made and awaited when first needed,
    and never changes afterwards: a runner either sandboxes every command,
    refuses every command, or (only with ``unsafe_shell`` and a sandbox that
    does not work) runs them all unconfined.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        default_timeout: float = DEFAULT_TIMEOUT,
        max_timeout: float = MAX_TIMEOUT,
        output_cap: int = OUTPUT_CAP,
        shell_env: Sequence[str] = (),
        shell_network: bool = False,
        unsafe_shell: bool = False,
        bwrap: str | None = None,
        limits: SandboxLimits | None = None,
        pids_cgroup: bool = True,
    ) -> None:
        self.root = Path(root).resolve()
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.output_cap = output_cap
        self.shell_env = tuple(shell_env)
        self.shell_network = shell_network
        self.unsafe_shell = unsafe_shell
        self.bwrap = bwrap or find_bwrap()
        self.limits = limits or SandboxLimits()
        # False: no pids cgroup, even where one could be made; the process
        # limit is then RLIMIT_NPROC's and the runner's count (tests of it).
        self.pids_cgroup = pids_cgroup
        # The trial runs while the server starts; `_settled` waits for it.
        start_sandbox_trial(self.bwrap, network=shell_network)
        self._root_problem = root_problem(self.root)
        self._sandbox_env = sandbox_env(self.root, self.shell_env)

    @cached_property
    def _settled(self) -> tuple[bool, str | None]:
        """``(sandboxed, why every command is refused or None)``, from the trial run."""
        ok, why = sandbox_status(self.bwrap, network=self.shell_network)
        if ok and self._root_problem:
            return ok, self._root_problem
        return ok, None if ok or self.unsafe_shell else why

    @property
    def sandboxed(self) -> bool:
        return self._settled[0]

    @property
    def _refusal(self) -> str | None:
        return self._settled[1]

    @property
    def _env(self) -> dict[str, str] | None:
        return self._sandbox_env if self.sandboxed else None

    def status(self) -> tuple[bool, str]:
        """``(True, how commands run)`` or ``(False, why every command is refused)``."""
        if self._refusal is not None:
            return False, self._refusal
        if self.sandboxed:
            return True, "sandboxed by bubblewrap"
        return True, "unconfined: the sandbox does not work here and unsafe_shell is set"

    def readiness(self) -> tuple[bool, str]:
        """What the core asks before it turns on a preset with this runtime's tools.

        Not ready where the sandbox does not work and ``unsafe_shell`` is not
        set: the shell preset then stays off, with this reason.
        """
        return self.status()

    def argv(
        self, command: str, info_fd: int | None = None, cgroup: PidsCgroup | None = None
    ) -> list[str]:
        """The command line ``command`` runs as: under bubblewrap when the sandbox works.

        ``info_fd`` is where bubblewrap reports its init's PID and namespaces;
        ``cgroup`` is the pids cgroup bubblewrap joins before it starts.
        """
        if not self.sandboxed:
            return ["bash", "-c", command]
        assert self.bwrap is not None
        info = [] if info_fd is None else ["--info-fd", str(info_fd)]
        sandbox = bwrap_args(self.bwrap, self.root, network=self.shell_network, limits=self.limits)
        argv = [*sandbox, *info, *limited_command(command, self.limits)]
        return argv if cgroup is None else cgroup.join_argv(argv)

    def run(
        self,
        command: str,
        timeout_seconds: float | None = None,
        *,
        progress: Progress | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """Run ``command``; ``progress(seconds, timeout, message)`` is called while it runs.

        Progress comes every ``PROGRESS_EVERY`` seconds, so a client that asked
        for it hears the call is alive and does not time out on a long command.
        ``stop()`` is asked as often as the command is checked on: once it says
        yes (the call was cancelled), the command is killed like one whose time
        is up, and the run ends with ``cancelled`` true.
        """
        if self._refusal is not None:
            raise ToolCallError(
                f"{self._refusal}. Commands are refused until then; tell the user, "
                "since only the operator of this server can change it."
            )
        if not command.strip():
            raise ToolCallError("command is empty; give a bash command such as 'ls -la'")
        if len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
            raise ToolCallError(
                f"command is over {MAX_COMMAND_BYTES} bytes; write a script file and run it"
            )
        if "\x00" in command:
            raise ToolCallError("command contains a NUL character, which bash cannot receive")
        timeout = self.default_timeout if timeout_seconds is None else float(timeout_seconds)
        if not math.isfinite(timeout):  # NaN compares false with everything: no deadline at all
            raise ToolCallError(
                f"timeout_seconds must be a number of seconds, not {timeout}; "
                f"give at most {self.max_timeout:g} or leave it out"
            )
        timeout = min(max(timeout, 0.001), self.max_timeout)
        self.root.mkdir(parents=True, exist_ok=True)

        info_read, info_write = os.pipe() if self.sandboxed else (-1, -1)
        cgroup = None
        if self.sandboxed and self.pids_cgroup:
            cgroup = PidsCgroup.make(self.limits.processes)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                self.argv(command, info_write if self.sandboxed else None, cgroup),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                # Sandboxed, bubblewrap itself gets only the command's environment:
                # its init is PID 1 inside, and /proc/1/environ is readable there.
                env=self._env,
                pass_fds=(info_write,) if self.sandboxed else (),
            )
        except OSError as exc:
            if self.sandboxed:
                os.close(info_read)
            if cgroup is not None:
                cgroup.remove(0)
            raise ToolCallError(f"bash could not be started: {exc.strerror}") from None
        finally:
            if self.sandboxed:
                os.close(info_write)
        assert proc.stdout is not None and proc.stderr is not None
        out = PipeCapture(proc.stdout, self.output_cap)
        err = PipeCapture(proc.stderr, self.output_cap)
        info = PipeCapture(os.fdopen(info_read, "rb"), 4096) if self.sandboxed else None
        for capture in (out, err, info):
            if capture is not None:
                capture.start()
        # Without a cgroup, and as the host's root (RLIMIT_NPROC does not
        # hold for it), only counting stops a fork loop: over the limit, the
        # whole sandbox is killed.
        watch = None if info is None or cgroup else _ProcessWatch(info, self.limits.processes)
        checks = _within(watch, stop)
        try:
            ended = _wait_unreaped(proc.pid, started + timeout, progress, timeout, checks)
            timed_out = not ended
        finally:
            # The leader is still a zombie here, so its group id cannot have
            # been reused: killing the group hits only what the command started.
            _kill_group(proc.pid)
            proc.wait()
            if info is not None:
                # Killing bubblewrap kills its init (--die-with-parent), and with
                # it every process in the namespace; wait until that is done, so
                # nothing the command started is alive when the call returns.
                info.join(TEARDOWN_GRACE)
                _wait_namespace_gone(bytes(info.data), time.monotonic() + TEARDOWN_GRACE)
            if cgroup is not None:
                cgroup.remove(TEARDOWN_GRACE)
        out.join(DRAIN_GRACE)
        err.join(DRAIN_GRACE)
        duration = time.monotonic() - started
        stopped = "" if watch is None or watch.over is None else f"\n[{watch.over}]"
        cancelled = stop is not None and stop()
        if cancelled:
            stopped += "\n[cancelled: the command was killed]"
        return {
            "exit_code": proc.returncode,
            "timed_out": timed_out,
            "stdout": out.text(),
            "stderr": err.text() + stopped,
            "stdout_truncated": out.dropped > 0,
            "stderr_truncated": err.dropped > 0,
            "duration_seconds": round(duration, 3),
            "timeout_seconds": timeout,
            "cancelled": cancelled,
        }


def _within(
    watch: Callable[[], bool] | None, stop: Callable[[], bool] | None
) -> Callable[[], bool] | None:
    """One check for ``_wait_unreaped``: within the process limit, and not stopped."""
    if stop is None:
        return watch
    if watch is None:
        return lambda: not stop()
    return lambda: watch() and not stop()


class PipeCapture(threading.Thread):
    """Drains one pipe, keeping the first ``cap`` bytes and counting the rest.

    Public for the units plugin, whose load processes are read the same way.
    """

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    def run(self) -> None:
        fd = self.stream.fileno()
        try:
            while chunk := os.read(fd, 65536):
                room = self.cap - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except OSError:
            pass
        finally:
            self.stream.close()

    def text(self) -> str:
        text = bytes(self.data).decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes were not kept]"
        return text


class _ProcessWatch:
    """Counts a sandbox's processes; ``over`` says why it was stopped, once it was.

    The count is what the sandbox's own ``/proc`` lists (its PID namespace and
    any nested in it), seen from the host through bubblewrap's init.
    """

    def __init__(self, info: PipeCapture, limit: int) -> None:
        self.info = info
        self.limit = limit
        self.over: str | None = None
        self._init: tuple[str, str] | None = None

    def __call__(self) -> bool:
        """True while the sandbox is within its limit."""
        if self._init is None:
            try:
                report = json.loads(bytes(self.info.data))
                pid, namespace = int(report["child-pid"]), int(report["pid-namespace"])
            except (ValueError, KeyError, TypeError):
                return True  # not made yet, or bubblewrap failed before it made it
            self._init = (f"/proc/{pid}", f"pid:[{namespace}]")
        init, pid_namespace = self._init
        proc = f"{init}/root/proc"
        try:
            if os.readlink(f"{init}/ns/pid") != pid_namespace:
                return True  # the init is gone, its PID reused: nothing left to count
            # bubblewrap reports the init before it has made the sandbox: until
            # the init's /proc is the sandbox's own (its PID 1 is the init), the
            # folder is the host's /proc.
            if os.readlink(f"{proc}/1/ns/pid") != pid_namespace:
                return True
            count = sum(1 for entry in os.scandir(proc) if entry.name.isdigit())
        except OSError:
            return True
        if count <= self.limit:
            return True
        self.over = (
            f"sandbox stopped: it ran more than {self.limit} processes, the limit for one command"
        )
        return False


def _wait_unreaped(
    pid: int,
    deadline: float,
    progress: Progress | None = None,
    timeout: float = 0.0,
    within_limits: Callable[[], bool] | None = None,
) -> bool:
    """Wait until ``pid`` exits without reaping it; False when the deadline passes first.

    ``progress`` hears the seconds waited so far, every ``PROGRESS_EVERY``
    seconds. ``within_limits`` is asked every ``WATCH_EVERY`` seconds at most;
    when it says no, the wait ends as if ``pid`` had exited (the caller kills it).
    """
    delay = 0.002
    longest = 0.05 if within_limits is None else WATCH_EVERY
    started = deadline - timeout
    next_report = started + PROGRESS_EVERY
    while True:
        if progress is not None and time.monotonic() >= next_report:
            waited = time.monotonic() - started
            progress(
                round(waited, 1), timeout, f"running for {waited:.0f}s of at most {timeout:g}s"
            )
            next_report += PROGRESS_EVERY
        try:
            result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # someone else (a global child watcher) reaped it
            return True
        if result is not None:
            return True
        if within_limits is not None and not within_limits():
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, longest)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _wait_namespace_gone(info: bytes, deadline: float) -> None:
    """Wait until bubblewrap's init (from its ``--info-fd`` report) has died.

    The init is the namespace's PID 1, and the kernel lets it become a zombie
    only after every other process in the namespace is dead; whoever reaps it
    later does not matter. Its PID is checked together with the namespace, so
    a recycled PID is never waited for.
    """
    try:
        report = json.loads(info)
        pid, namespace = int(report["child-pid"]), int(report["pid-namespace"])
    except (ValueError, KeyError, TypeError):
        return  # bubblewrap failed before it made the sandbox: nothing to wait for
    delay = 0.001
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state in ("Z", "X") or os.readlink(f"/proc/{pid}/ns/pid") != f"pid:[{namespace}]":
                return
        except (OSError, IndexError):  # reaped already
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
