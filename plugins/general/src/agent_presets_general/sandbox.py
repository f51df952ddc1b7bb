"""The bubblewrap sandbox every shell command runs in.

A command sees the host's system directories read-only, the file root as the
only writable path (and its working folder), a private ``/tmp``, a fresh
``/proc`` for its own PID namespace and a minimal ``/dev``; nothing else of the
host exists inside. It runs in new user, PID, IPC, UTS and cgroup namespaces
(and a new network namespace unless the operator allows the network) with
every capability dropped. When the sandbox's first process (bubblewrap's init,
PID 1 inside) dies, the kernel kills everything else in the namespace, so
nothing a command starts can outlive the call, ``setsid`` or not.

Whether bubblewrap works here is decided by running it, not by finding it:
user namespaces can be switched off, blocked by a container's seccomp policy
or by AppArmor, and then an installed ``bwrap`` still fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
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


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def bwrap_args(bwrap: str, root: Path, *, network: bool = False) -> list[str]:
    """The bubblewrap command line up to (not including) the command it runs.

    Order matters to bubblewrap: later mounts cover earlier ones, so the root
    is bound after the private /tmp (a root under /tmp stays visible).
    """
    args = [bwrap, *NAMESPACES]
    if not network:
        args.append("--unshare-net")
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
    args += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
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
                [*bwrap_args(bwrap, path, network=network), "bash", "-c", "exit 0"],
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
