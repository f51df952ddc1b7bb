"""The two lanes: what each collects, and how many examples a property runs in each.

On a machine without a system package a test needs (tests/system_packages.py)
the quick lane skips such a test and prints what to install; the full lane
runs it, and its skip fails the run: CI cannot pass without the package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from lanes import QUICK_PROFILE, TEMP_ROOT, examples, memory_temp_root

ROOT = Path(__file__).parent.parent
NEEDS_SANDBOX = "tests/plugins/general/test_general_bash.py::test_runs_in_the_file_root"


def pytest_run(*options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *options],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def lane(*options: str) -> subprocess.CompletedProcess[str]:
    # Only the environment's own scripts on PATH: no bwrap, as on a machine with only Python.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
         *options, NEEDS_SANDBOX],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.slow  # two pytest runs, each importing every plugin
def test_a_missing_system_package_skips_in_the_quick_lane_and_fails_the_full_lane() -> None:
    quick = lane()
    assert quick.returncode == 0, quick.stdout + quick.stderr
    assert "SKIPPED" in quick.stdout
    assert "needs bubblewrap (apt-get install bubblewrap)" in quick.stdout
    full = lane("--full")
    assert full.returncode == 1, full.stdout + full.stderr
    assert "full lane: 1 test(s) skipped, and the full lane skips nothing" in full.stdout


def test_a_named_example_count_is_the_full_lanes_and_the_quick_lane_runs_at_most_its_own() -> None:
    quick = settings.get_profile(QUICK_PROFILE).max_examples
    was = settings.get_current_profile_name()
    try:
        settings.load_profile(QUICK_PROFILE)
        assert (examples(quick * 12), examples(quick - 1)) == (quick, quick - 1)
        settings.load_profile("ci")
        assert (examples(quick * 12), examples(quick - 1)) == (quick * 12, quick - 1)
    finally:
        settings.load_profile(was)


@pytest.mark.slow  # three pytest runs that collect what is left of tests/ without core and plugins
def test_the_quick_lane_does_not_import_tests_e2e_unless_asked_for_it_by_path() -> None:
    options = ["--collect-only", "-q", "--ignore=tests/core", "--ignore=tests/plugins"]
    quick = pytest_run(*options)
    chosen = pytest_run(*options, "-m", "e2e")
    e2e, everything = collected(chosen.stdout)
    assert e2e > 0 and "tests/e2e/test_e2e_http.py::" in chosen.stdout
    assert collected(quick.stdout)[1] == everything - e2e  # not even collected, then deselected
    by_path = pytest_run("--collect-only", "-q", "tests/e2e/test_e2e_http.py")
    assert by_path.returncode == 5, by_path.stdout + by_path.stderr  # nothing selected
    assert re.search(r"no tests collected \(\d+ deselected\)", by_path.stdout), by_path.stdout


def collected(summary: str) -> tuple[int, int]:
    """(selected, collected) from the last line of ``pytest --collect-only -q``."""
    found = re.search(r"(\d+)(?:/(\d+))? tests? collected", summary)
    assert found, summary
    return int(found[1]), int(found[2] or found[1])


@pytest.mark.slow  # a pytest run of its own
def test_where_python_may_not_write_byte_code_a_run_keeps_it_in_pytests_cache(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-o", f"cache_dir={tmp_path}",
         "tests/core/test_core_safetext.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    kept = list((tmp_path / "d").rglob("*.pyc"))
    # The test module as pytest rewrote it, a core module, libraries.
    names = {(path.parent.name, path.name.split(".")[0]) for path in kept}
    assert ("core", "test_core_safetext") in names
    assert any("agent_presets" in p.parts and p.name.startswith("safetext.") for p in kept)
    assert any("site-packages" in path.parts for path in kept)


def test_temporary_folders_are_in_a_usable_tmpfs_where_the_machine_has_one(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    line = "tmpfs /dev/shm tmpfs {} 0 0\nproc /proc proc rw 0 0\n"
    assert memory_temp_root(line.format("rw,nosuid,nodev,noexec")) is None  # as Docker mounts it
    assert memory_temp_root(line.format("ro,relatime")) is None
    assert memory_temp_root("/dev/sda1 /dev/shm ext4 rw 0 0\n") is None
    assert memory_temp_root("") is None
    chosen = request.config.stash.get(TEMP_ROOT, None)
    if chosen is not None:
        assert chosen == memory_temp_root() and tmp_path.is_relative_to(chosen)
    elif memory_temp_root() is not None:  # the caller chose the folder: --basetemp or the env
        assert request.config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT")


@pytest.mark.slow  # a pytest run of its own
def test_slowest_files_lists_the_test_files_whose_tests_took_longest() -> None:
    run = pytest_run("-q", "--slowest-files", "1", "tests/core/test_core_safetext.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "slowest 1 test files" in run.stdout
    assert re.search(r"\d+\.\d\ds +100\.0%  tests/core/test_core_safetext\.py\n", run.stdout)
