"""Rules of the two lanes that tests/conftest.py applies and tests/test_lanes.py checks.

Examples: a property test that needs more than its profile gives names its
count with ``@settings(max_examples=examples(300))``; the full lane runs that
many, and the quick lane no more than its own profile's count, as for every
other property. A count below the profile's (a property whose examples are
each expensive) is kept in both lanes.

Temporary folders: pytest's (``tmp_path``) go to a tmpfs when the machine has
a usable one (``memory_temp_root``), in both lanes. The tests open thousands
of state databases and atomic files, each with its fsyncs, which a disk
serves in milliseconds (more when something else writes) and a tmpfs at
once. A test kills processes, never the machine, so what it checks of
durability holds in memory too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

import pytest

QUICK_PROFILE: Final = "quick"


def examples(full: int) -> int:
    """``full`` examples, capped at the ``quick`` profile's count when that profile is loaded."""
    from hypothesis import settings  # here: tests/conftest.py imports this module early

    if settings.get_current_profile_name() == QUICK_PROFILE:
        return min(full, settings().max_examples)
    return full


MEMORY_FOLDER: Final = Path("/dev/shm")
MEMORY_FOLDER_FREE: Final = 2 * 2**30
# Where tests/conftest.py put pytest's temporary folders (tmp_path), when it chose.
TEMP_ROOT: Final = pytest.StashKey[Path]()
# Where it keeps byte code the environment would not let Python write (keep_byte_code).
BYTE_CODE: Final = pytest.StashKey[Path]()


def memory_temp_root(mounts: str | None = None) -> Path | None:
    """``/dev/shm`` if it is a tmpfs the tests can keep their temporary folders in: writable,
    executable, with 2 GiB free; None elsewhere (a container's 64 MB noexec one, not Linux).

    ``mounts`` is the text of ``/proc/self/mounts``, read when not given.
    """
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    for line in mounts.splitlines():
        _, where, kind, options, *_ = line.split()
        if Path(where) != MEMORY_FOLDER or kind != "tmpfs":
            continue
        if not {"ro", "noexec"}.isdisjoint(options.split(",")):
            return None
        if not os.access(MEMORY_FOLDER, os.W_OK | os.X_OK):
            return None
        if shutil.disk_usage(MEMORY_FOLDER).free < MEMORY_FOLDER_FREE:
            return None
        return MEMORY_FOLDER
    return None
