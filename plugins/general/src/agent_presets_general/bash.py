"""Run a bash command in the file root, bounded in time and output.

The command runs in a session of its own, so its process group holds it and
everything it starts. When the command ends (or its time is up) the whole
group is killed: nothing it left running in the background outlives the call.
Output is drained as it comes and only the first ``output_cap`` bytes of each
stream are kept, so a command that prints without end cannot fill memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Final

from agent_presets import ToolCallError

DEFAULT_TIMEOUT: Final = 30.0
MAX_TIMEOUT: Final = 120.0
OUTPUT_CAP: Final = 64 * 1024
MAX_COMMAND_BYTES: Final = 64 * 1024
# How long to wait for the output pipes to close after the group is killed; a
# process that escaped the group (setsid) may hold them open for ever.
DRAIN_GRACE: Final = 2.0


class BashRunner:
    """The runtime behind ``space_app_run_bash``."""

    def __init__(
        self,
        root: str | Path,
        *,
        default_timeout: float = DEFAULT_TIMEOUT,
        max_timeout: float = MAX_TIMEOUT,
        output_cap: int = OUTPUT_CAP,
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.output_cap = output_cap
        self.env = env

    def run(self, command: str, timeout_seconds: float | None = None) -> dict[str, Any]:
        if not command.strip():
            raise ToolCallError("command is empty; give a bash command such as 'ls -la'")
        if len(command.encode("utf-8")) > MAX_COMMAND_BYTES:
            raise ToolCallError(
                f"command is over {MAX_COMMAND_BYTES} bytes; write a script file and run it"
            )
        if "\x00" in command:
            raise ToolCallError("command contains a NUL character, which bash cannot receive")
        timeout = self.default_timeout if timeout_seconds is None else float(timeout_seconds)
        timeout = min(max(timeout, 0.001), self.max_timeout)
        self.root.mkdir(parents=True, exist_ok=True)

        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=self.env,
            )
        except OSError as exc:
            raise ToolCallError(f"bash could not be started: {exc.strerror}") from None
        assert proc.stdout is not None and proc.stderr is not None
        out = _Capture(proc.stdout, self.output_cap)
        err = _Capture(proc.stderr, self.output_cap)
        out.start()
        err.start()
        try:
            timed_out = not _wait_unreaped(proc.pid, started + timeout)
        finally:
            # The leader is still a zombie here, so its group id cannot have
            # been reused: killing the group hits only what the command started.
            _kill_group(proc.pid)
            proc.wait()
        out.join(DRAIN_GRACE)
        err.join(DRAIN_GRACE)
        duration = time.monotonic() - started
        return {
            "exit_code": proc.returncode,
            "timed_out": timed_out,
            "stdout": out.text(),
            "stderr": err.text(),
            "stdout_truncated": out.dropped > 0,
            "stderr_truncated": err.dropped > 0,
            "duration_seconds": round(duration, 3),
            "timeout_seconds": timeout,
        }


class _Capture(threading.Thread):
    """Drains one pipe, keeping the first ``cap`` bytes and counting the rest."""

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


def _wait_unreaped(pid: int, deadline: float) -> bool:
    """Wait until ``pid`` exits without reaping it; False when the deadline passes first."""
    delay = 0.002
    while True:
        try:
            result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # someone else (a global child watcher) reaped it
            return True
        if result is not None:
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
