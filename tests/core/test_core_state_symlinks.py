"""A symlink planted in the state directory must not make the server write its target.

The server often runs as root (CI, containers), and the state directory may
have been made by someone else (a shared or pre-made folder): its lock file
is truncated and written, and its database files made 0600 and written by
SQLite. Through a symlink, each of those would act on any file of the host.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_presets.lib.model import PresetError
from agent_presets.server.store.lock import StateLock
from agent_presets.server.store.statedb import StateStore

PRECIOUS = "precious: not the server's\n"


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text(PRECIOUS)
    target.chmod(0o644)
    return target


@pytest.mark.parametrize("name", ["state.lock"])
def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(
    tmp_path: Path, name: str
) -> None:
    state, target = tmp_path / "state", _outside(tmp_path)
    state.mkdir()
    (state / name).symlink_to(target)
    with pytest.raises(PresetError, match="symlink"):
        StateLock(state).acquire()
    assert target.read_text() == PRECIOUS
    assert target.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("name", ["state.db", "state.db-wal", "state.db-shm"])
def test_a_symlinked_database_file_is_refused_and_its_target_untouched(
    tmp_path: Path, name: str
) -> None:
    state, target = tmp_path / "state", _outside(tmp_path)
    state.mkdir()
    (state / name).symlink_to(target)
    with pytest.raises(PresetError, match="symlink"):
        StateStore(state / "state.db").close()
    assert target.read_text() == PRECIOUS
    assert target.stat().st_mode & 0o777 == 0o644
    assert os.path.islink(state / name)
