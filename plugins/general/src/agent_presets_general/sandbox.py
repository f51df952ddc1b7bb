"""The bubblewrap sandbox every shell command runs in.

A command sees the host's system directories read-only, the file root as the
only writable path (and its working folder), a private ``/tmp``, a fresh
read-only ``/proc`` for its own PID namespace and a minimal ``/dev``; nothing
else of the host exists inside, and nothing host-wide is writable (where the
server runs as root, the sandbox's uid 0 is the host's root). It runs in new
user, PID, IPC, UTS and cgroup namespaces (and a new network namespace unless
the operator allows the network) with every capability dropped. When the
sandbox's first process (bubblewrap's init, PID 1 inside) dies, the kernel
kills everything else in the namespace, so nothing a command starts can
outlive the call, ``setsid`` or not. Its processes, memory and files are
limited (``SandboxLimits``).

Whether bubblewrap works here is decided by running it, not by finding it:
user namespaces can be switched off, blocked by a container's seccomp policy
or by AppArmor, and then an installed ``bwrap`` still fails.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

# The fixed environment a command gets, before the operator's listed names.
BASELINE_PATH: Final = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

NAMESPACES: Final = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
)

# Top-level system directories. On a merged-/usr system most are symlinks into
# /usr and are recreated as symlinks, so the sandbox's layout matches the host's.
SYSTEM_DIRS: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

# Only what programs need from /etc, not the whole folder: /etc also holds
# shadow files, ssh host keys and service credentials, and a command runs as
# the server's user, who may own them.
ETC_ENTRIES: Final = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "gai.conf",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "magic",
    "magic.mime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "profile",
    "protocols",
    "resolv.conf",
    "services",
    "ssl",
    "terminfo",
    "timezone",
)

# What one command may take, the operator's defaults (docs/security.md,
# "Limits on what a command may take"). Processes count bubblewrap's own and,
# where a pids cgroup or RLIMIT_NPROC enforces them, threads as well.
MAX_PROCESSES: Final = 256
MAX_MEMORY_BYTES: Final = 1 << 30
"""Per process: ``RLIMIT_DATA`` (heap and private writable mappings)."""
MAX_FILE_BYTES: Final = 1 << 30
"""The largest file a command may write: ``RLIMIT_FSIZE``."""
TMP_BYTES: Final = 512 << 20
"""The size of the private ``/tmp``, a tmpfs held in the host's memory."""
SHM_BYTES: Final = 64 << 20
"""The size of ``/dev/shm``, the same."""

ENV_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TRIAL_TIMEOUT: Final = 10.0
INSTALL_HINT: Final = (
    "install bubblewrap (the Debian/Ubuntu package 'bubblewrap') and allow unprivileged "
    "user namespaces, or start the server with --unsafe-shell to run shell commands "
    "without a sandbox"
)


@dataclass(frozen=True)
class ShellOptions:
    """How the operator set up the shell: the ``serve`` flags of the same names.

    ``shell_env`` lists environment variables passed from the server's
    environment into each command; ``shell_network`` keeps the host's network
    reachable; ``unsafe_shell`` runs commands without the sandbox where it does
    not work (and only there).
    """

    shell_env: tuple[str, ...] = ()
    shell_network: bool = False
    unsafe_shell: bool = False

    def __post_init__(self) -> None:
        for name in self.shell_env:
            if not ENV_NAME.match(name):
                raise ValueError(
                    f"shell_env: {name!r} is not an environment variable name; "
                    "use letters, digits and '_', not starting with a digit"
                )

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | None) -> ShellOptions:
        """Options from plain data (the core hands them over without importing this plugin)."""
        if options is None:
            return cls()
        unknown = sorted(set(options) - {"shell_env", "shell_network", "unsafe_shell"})
        if unknown:
            raise ValueError(
                f"shell options: unknown {', '.join(unknown)}; "
                "known: shell_env, shell_network, unsafe_shell"
            )
        names = options.get("shell_env", ())
        if isinstance(names, str):
            raise ValueError(f"shell_env must be a list of names, not the string {names!r}")
        return cls(
            shell_env=tuple(names),
            shell_network=bool(options.get("shell_network", False)),
            unsafe_shell=bool(options.get("unsafe_shell", False)),
        )


@dataclass(frozen=True)
class SandboxLimits:
    """What one command may take; the defaults are the constants above."""

    processes: int = MAX_PROCESSES
    memory_bytes: int = MAX_MEMORY_BYTES
    file_bytes: int = MAX_FILE_BYTES
    tmp_bytes: int = TMP_BYTES
    shm_bytes: int = SHM_BYTES

    def __post_init__(self) -> None:
        for name in ("processes", "memory_bytes", "file_bytes", "tmp_bytes", "shm_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 16:
                raise ValueError(
                    f"sandbox limit {name} must be a whole number >= 16, not {value!r}"
                )


def limited_command(command: str, limits: SandboxLimits) -> list[str]:
    """``bash -c command`` under the limits' resource limits, soft and hard.

    Set inside the sandbox, after its user namespace is made: there
    ``RLIMIT_NPROC`` counts only the sandbox's processes (the kernel counts
    per user namespace), while set on bubblewrap it would count every process
    the server's user has on the host. With every capability dropped the
    command cannot raise them again. The kernel does not enforce
    ``RLIMIT_NPROC`` for the host's root; see ``PidsCgroup``.
    """
    processes = _at_most(resource.RLIMIT_NPROC, limits.processes)
    memory = _at_most(resource.RLIMIT_DATA, limits.memory_bytes)
    files = _at_most(resource.RLIMIT_FSIZE, limits.file_bytes)
    # In KiB, as bash counts outside its POSIX mode (which an inherited
    # POSIXLY_CORRECT would turn on, and with it 512-byte blocks for -f).
    ulimit = f"set +o posix; ulimit -u {processes} -d {memory // 1024} -f {files // 1024}"
    return ["bash", "-c", f'{ulimit} && exec bash -c "$1"', "bash", command]


def _at_most(kind: int, value: int) -> int:
    """``value``, or the server's own hard limit where that is lower (it cannot be raised)."""
    hard = resource.getrlimit(kind)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _bwrap_help(bwrap: str) -> bytes:
    """What this bubblewrap's ``--help`` says: which options it has."""
    try:
        shown = subprocess.run(
            [bwrap, "--help"], capture_output=True, timeout=TRIAL_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return b""
    return shown.stdout + shown.stderr


def _sizes_tmpfs(bwrap: str) -> bool:
    """Whether this bubblewrap has ``--size`` (0.7 and later) to bound a tmpfs."""
    return b"--size" in _bwrap_help(bwrap)


def _disables_userns(bwrap: str) -> bool:
    """Whether this bubblewrap has ``--disable-userns`` (0.8 and later)."""
    return b"--disable-userns" in _bwrap_help(bwrap)


def bwrap_args(
    bwrap: str, root: Path, *, network: bool = False, limits: SandboxLimits | None = None
) -> list[str]:
    """The bubblewrap command line up to (not including) the command it runs.

    Order matters to bubblewrap: later mounts cover earlier ones, so the root
    is bound after the private /tmp (a root under /tmp stays visible).
    """
    limits = limits or SandboxLimits()
    sized = _sizes_tmpfs(bwrap)

    def tmpfs(path: str, size: int) -> list[str]:
        # A tmpfs lives in the host's memory; unbounded it may take half of it.
        return [*(["--size", str(size)] if sized else []), "--tmpfs", path]

    args = [bwrap, *NAMESPACES]
    if not network:
        args.append("--unshare-net")
    # No user namespace inside the sandbox's own: in one, a command holds every
    # capability over mounts of its own, and with uid 0 being the host's root a
    # mounted pids cgroup's `pids.max` passes the owner check (the process limit
    # raised to `max`), as would the server's memory cgroup; a fresh tmpfs would
    # have no size.
    if _disables_userns(bwrap):
        args.append("--disable-userns")
    # Without --cap-drop a bwrap run by root keeps its capabilities inside the
    # user namespace, and `mount -o remount,rw /` gets through.
    args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += [*tmpfs("/tmp", limits.tmp_bytes), "--proc", "/proc", "--dev", "/dev"]
    # /dev read-only (its device files stay usable) but for a bounded /dev/shm,
    # so /dev is no unbounded tmpfs besides /tmp.
    args += [*tmpfs("/dev/shm", limits.shm_bytes), "--remount-ro", "/dev"]
    # All of the fresh /proc read-only, not only the few folders bubblewrap
    # covers itself (it skips /proc/sys, whose folder mode is r-x though its
    # files are not). A sysctl write is checked against the file's mode and the
    # writer's uid alone, no capability needed, and the sandbox's uid 0 is the
    # host's root when the server runs as root: `kernel/core_pattern` would run
    # a program as real root outside every namespace.
    args += ["--remount-ro", "/proc"]
    args += ["--bind", str(root), str(root), "--chdir", str(root)]
    # The sandbox's own / is a tmpfs holding the mount points; without this a
    # command could write there, a writable path besides the root and /tmp.
    args += ["--remount-ro", "/"]
    return args


class PidsCgroup:
    """A pids cgroup of one command's own, capping its processes and threads.

    ``RLIMIT_NPROC`` is not enforced for the host's root (the kernel exempts
    it), so where the server runs as root only a cgroup can stop a fork loop
    before it starts. One is made per command under the server's own pids
    cgroup, where the server may write there (root on cgroup v1, or a v2
    cgroup whose children have the pids controller); ``make`` answers None
    where it may not, and the runner watches the count itself instead.
    bubblewrap joins it before it makes the sandbox (``join_argv``), so no
    process of the command is ever outside it.
    """

    _names = itertools.count()

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def make(cls, limit: int) -> PidsCgroup | None:
        parent = _pids_cgroup_parent()
        if parent is None:
            return None
        path = parent / f"presets-sandbox-{os.getpid()}-{next(cls._names)}"
        try:
            path.mkdir()
        except OSError:
            return None
        made = cls(path)
        try:
            (path / "pids.max").write_text(f"{limit}\n")
        except OSError:
            made.remove(0)
            return None
        return made

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv`` started by a shell that first moves itself into the cgroup."""
        join = 'echo $$ > "$0" && exec "$@"'
        return ["/bin/sh", "-c", join, str(self.path / "cgroup.procs"), *argv]

    def remove(self, grace: float) -> None:
        """Remove the cgroup once its last process has exited (within ``grace`` seconds)."""
        deadline = time.monotonic() + grace
        delay = 0.001
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # a process outlived the teardown; the empty folder is all that stays
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


@functools.cache
def _pids_cgroup_parent() -> Path | None:
    """The folder of the server's own pids cgroup, if its children get a ``pids.max``.

    Found once per process, which then also removes the empty cgroups a
    killed server (``kill -9``) left there.
    """
    folder = _find_pids_cgroup_parent()
    if folder is not None:
        for stale in folder.glob("presets-sandbox-*-*"):
            server = stale.name.split("-")[2]
            if server.isdigit() and not Path(f"/proc/{server}").exists():
                with contextlib.suppress(OSError):
                    stale.rmdir()
    return folder


def _find_pids_cgroup_parent() -> Path | None:
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return None
    for membership in memberships:
        _, controllers, own = membership.split(":", 2)
        v2 = controllers == ""
        if not v2 and "pids" not in controllers.split(","):
            continue
        for fields in mounts:
            if "-" not in fields:
                continue
            kind = fields[fields.index("-") + 1 :]
            if len(kind) < 3 or kind[0] != ("cgroup2" if v2 else "cgroup"):
                continue
            if not v2 and "pids" not in kind[2].split(","):
                continue
            mount_root, mount_point = fields[3], fields[4]
            if not Path(own).is_relative_to(mount_root):
                continue
            folder = Path(mount_point) / Path(own).relative_to(mount_root)
            if v2 and not _v2_children_get_pids(folder):
                continue
            if os.access(folder, os.W_OK):
                return folder
    return None


def _v2_children_get_pids(folder: Path) -> bool:
    try:
        return "pids" in (folder / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def root_problem(root: Path) -> str | None:
    """Why ``root`` cannot be a sandbox's writable root, or None.

    The root is bound writable over everything else, so a root that holds a
    system folder (``/``, say) would make that folder writable too.
    """
    for system in (*SYSTEM_DIRS, "/etc", "/proc", "/dev"):
        if Path(system).is_relative_to(root):
            return (
                f"the file root {root} holds the system folder {system}, which the sandbox "
                "must keep read-only; start the server with a project folder as --root"
            )
    return None


def sandbox_env(
    root: Path, names: Sequence[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The baseline environment plus the listed names the server has (they win over it)."""
    environ = os.environ if environ is None else environ
    env = {"PATH": BASELINE_PATH, "HOME": str(root), "LANG": "C.UTF-8"}
    env.update({name: environ[name] for name in names if name in environ})
    return env


class _Trial:
    """One trial run, in a thread of its own so it overlaps the server's start-up.

    Not a daemon thread: an interpreter that exits first still waits for it
    (at most ``TRIAL_TIMEOUT``), so its temporary folder is always removed.
    """

    def __init__(self, bwrap: str | None, network: bool) -> None:
        self._done = threading.Event()
        self._result = (False, "the shell sandbox's trial run did not finish")
        self._thread = threading.Thread(
            target=self._run, args=(bwrap, network), name="presets-sandbox-trial"
        )
        self._thread.start()

    def _run(self, bwrap: str | None, network: bool) -> None:
        try:
            self._result = _trial(bwrap, network)
        finally:
            self._done.set()

    def result(self) -> tuple[bool, str]:
        self._done.wait()
        return self._result


_trials: dict[tuple[str | None, bool], _Trial] = {}
_trials_lock = threading.Lock()


def start_sandbox_trial(bwrap: str | None = None, *, network: bool = False) -> None:
    """Start the trial run ``sandbox_status`` answers from, without waiting for it.

    A runtime made at start-up calls this, so the trial (a bubblewrap process,
    tens of milliseconds) runs while the server goes on starting, and the
    first command that needs the answer waits only for what is left of it.
    """
    _trial_for(bwrap or find_bwrap(), network)


def sandbox_status(bwrap: str | None = None, *, network: bool = False) -> tuple[bool, str]:
    """Whether a sandbox can be made here: ``(True, "")`` or ``(False, why)``.

    The answer comes from a trial run with the very flags a command gets, made
    once per process and bubblewrap path (started by ``start_sandbox_trial``
    or by this call, which waits for it). ``why`` is one sentence ending with
    what the operator can do.
    """
    return _trial_for(bwrap or find_bwrap(), network).result()


def _trial_for(bwrap: str | None, network: bool) -> _Trial:
    key = (bwrap, network)
    with _trials_lock:
        if key not in _trials:
            _trials[key] = _Trial(bwrap, network)
        return _trials[key]


def _trial(bwrap: str | None, network: bool) -> tuple[bool, str]:
    if bwrap is None:
        return False, f"the shell sandbox needs bubblewrap (bwrap), not found: {INSTALL_HINT}"
    with tempfile.TemporaryDirectory(prefix="presets-sandbox-trial-") as root:
        path = Path(root).resolve()
        try:
            proc = subprocess.run(
                [
                    *bwrap_args(bwrap, path, network=network),
                    *limited_command("exit 0", SandboxLimits()),
                ],
                env=sandbox_env(path, ()),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TRIAL_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"the shell sandbox could not start {bwrap} ({exc}): {INSTALL_HINT}"
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", errors="replace").strip().splitlines()
        detail = said[-1][:200] if said else f"exit code {proc.returncode}"
        return False, f"the shell sandbox's trial run of {bwrap} failed ({detail}): {INSTALL_HINT}"
    return True, ""
