"""The two test lanes, and the hypothesis profiles they run with.

Quick lane, the everyday command: ``uv run pytest -n auto``. It deselects
every test carrying a *full-lane marker* and runs hypothesis with the
``quick`` profile. Everything under ``tests/e2e`` carries the ``e2e`` marker,
so the quick lane does not even import those files (each xdist worker would
import them only to deselect them); a path inside ``tests/e2e`` given on the
command line is collected and deselected as before.

Full lane, what ``.ci/run`` runs: ``uv run pytest -n auto --full``. Every
test, with the ``ci`` profile; nothing is deselected or skipped.

A full-lane marker is any marker registered in the root ``pyproject.toml``
whose description starts with ``full lane only``. The list of such markers
lives there and only there, so a new kind of long test (a wheel build, a
browser, a conformance suite) joins the scheme by registering its marker.
An explicit ``-m`` expression is taken as the caller's own choice of tests
(``uv run pytest -m slow`` runs the slow ones) and is left alone.

The hypothesis profile is ``HYPOTHESIS_PROFILE`` when set, else ``ci`` under
``--full`` or when ``CI`` is set to a true value, else ``quick``. Hypothesis's
own ``--hypothesis-profile`` option overrides all of these. A test that needs
more examples than the profile gives names its full-lane count with
``examples(N)`` (tests/lanes.py); the quick lane runs no more than its own.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Final

import pytest
from lanes import BYTE_CODE, QUICK_PROFILE, TEMP_ROOT, memory_temp_root

FULL_LANE_PREFIX: Final = "full lane only"


def register_profiles() -> None:
    # Imported here, once keep_byte_code has run: xdist's controller needs hypothesis only
    # for the header, and would otherwise compile it from source at every start.
    from hypothesis import settings

    # Wall-clock deadlines on a shared machine measure the neighbours, not the code.
    settings.register_profile(
        QUICK_PROFILE,
        # Few examples; the local example database replays a failure first next run.
        max_examples=25,
        deadline=None,
    )
    settings.register_profile(
        "ci",
        # Many examples, a reproduction blob printed on failure, and no example
        # database: a fresh clone has none, and CI must not depend on one.
        max_examples=300,
        deadline=None,
        database=None,
        print_blob=True,
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="full lane: run every test, full-lane markers included, with the 'ci' "
        "hypothesis profile (what .ci/run runs)",
    )
    parser.addoption(
        "--slowest-files",
        type=int,
        default=0,
        metavar="N",
        help="after the run, list the N test files whose tests took longest "
        "(setup, call and teardown summed; collection not included)",
    )


def full_lane_markers(config: pytest.Config) -> list[str]:
    """The registered markers whose tests only the full lane runs."""
    names = []
    for line in config.getini("markers"):
        name, _, description = str(line).partition(":")
        if description.strip().startswith(FULL_LANE_PREFIX):
            names.append(name.split("(")[0].strip())
    return names


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def hypothesis_profile(config: pytest.Config) -> str:
    chosen = os.environ.get("HYPOTHESIS_PROFILE", "").strip()
    if chosen:
        return chosen
    if config.getoption("--full") or _truthy(os.environ.get("CI")):
        return "ci"
    return QUICK_PROFILE


def quick_lane(config: pytest.Config) -> bool:
    """Neither ``--full`` nor an ``-m`` expression: full-lane tests are deselected."""
    return not config.getoption("--full") and not config.option.markexpr


def keep_byte_code(config: pytest.Config) -> None:
    """Where the environment forbids byte code beside the sources (``PYTHONDONTWRITEBYTECODE``,
    as many containers set it), keep it in pytest's cache folder instead.

    Otherwise every Python of a run, each xdist worker and each server or ``python -X
    importtime`` a test starts, compiles every module it imports from source, every run:
    pytest's rewritten test modules, mcp, hypothesis, the core. That was about a third of
    the quick lane's CPU time on a machine that sets it. ``PYTHONPYCACHEPREFIX`` puts the
    byte code under ``.pytest_cache`` (``-p no:cacheprovider`` turns it off with the cache);
    a prefix the caller chose is left alone.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = getattr(config, "cache", None)
    if cache is None:
        return
    try:
        folder = str(cache.mkdir("pycache"))
    except OSError:
        return
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    # This process too, for what it imports from here on: the test modules, their imports.
    sys.dont_write_bytecode = False
    sys.pycache_prefix = folder
    config.stash[BYTE_CODE] = Path(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    # The byte code of modules the tests wrote into temporary folders is of no later use:
    # dropped with the session, so the cache holds only the sources', whatever the runs.
    folder = config.stash.get(BYTE_CODE, None)
    if folder is not None:
        temp_root = Path(os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir())
        shutil.rmtree(folder / temp_root.resolve().relative_to("/"), ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # xdist's workers inherit what the controller set
        keep_byte_code(config)
    from hypothesis import settings

    register_profiles()
    # Runs before hypothesis's own pytest_configure, so --hypothesis-profile wins.
    settings.load_profile(hypothesis_profile(config))
    # tmp_path in memory where it can be (tests/lanes.py says why); --basetemp or
    # PYTEST_DEBUG_TEMPROOT choose another folder.
    if not config.option.basetemp and "PYTEST_DEBUG_TEMPROOT" not in os.environ:
        memory = memory_temp_root()
        if memory is not None:
            os.environ["PYTEST_DEBUG_TEMPROOT"] = str(memory)
            config.stash[TEMP_ROOT] = memory
    if config.getoption("--full") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_SkipCounter(), "full-lane-skip-counter")
    if config.getoption("--slowest-files") > 0 and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_FileDurations(config.getoption("--slowest-files")))


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--full"):
        lane = "full (every test)"
    elif config.option.markexpr:
        lane = f"chosen by -m {config.option.markexpr!r}"
    else:
        marked = ", ".join(full_lane_markers(config))
        lane = (
            f"quick (tests marked {marked} are deselected, and tests/e2e, all e2e, is not "
            "collected; --full runs them)"
        )
    from hypothesis import settings

    header = f"lane: {lane}; hypothesis profile: {settings.get_current_profile_name()}"
    memory = config.stash.get(TEMP_ROOT, None)
    if memory is not None:
        header += f"; tmp_path in {memory} (tmpfs)"
    byte_code = config.stash.get(BYTE_CODE, None)
    if byte_code is not None:
        shown = (
            byte_code.relative_to(config.rootpath)
            if byte_code.is_relative_to(config.rootpath)
            else byte_code
        )
        header += f"; byte code in {shown}"
    return header


E2E: Final = Path(__file__).parent / "e2e"


@pytest.fixture
def shell_sandbox() -> None:
    """The test runs shell commands: skipped where bubblewrap cannot sandbox them
    (tests/system_packages.py); the full lane fails on that skip."""
    from system_packages import need_shell_sandbox

    need_shell_sandbox()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # The quick lane would deselect every test under tests/e2e (the e2e marker below), so it
    # skips importing them: a few seconds per xdist worker. Asked for by path, they are
    # collected, and deselected, as any full-lane test is.
    if collection_path == E2E and quick_lane(config):
        here = config.invocation_params.dir
        asked = ((here / arg.split("::")[0]).resolve() for arg in config.args)
        if not any(path == E2E or E2E in path.parents for path in asked):
            return True
    return None


def pytest_itemcollected(item: pytest.Item) -> None:
    # Everything under tests/e2e starts servers or CLI subprocesses: the full lane's. Marked
    # as it is collected, so `-m e2e` (applied before the hook below) selects it too.
    if E2E in item.path.parents:
        item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(trylast=True)  # after any conftest that adds markers while collecting
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not quick_lane(config):
        return
    markers = set(full_lane_markers(config))
    keep: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        if markers.intersection(m.name for m in item.iter_markers()):
            deselected.append(item)
        else:
            keep.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = keep


class _SkipCounter:
    """Under ``--full`` a skipped test fails the run: the full lane skips nothing."""

    def __init__(self) -> None:
        self.skipped: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under xdist the workers' reports are replayed here, in the controller.
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skipped.append(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.skipped and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.skipped:
            terminalreporter.write_line(
                f"full lane: {len(self.skipped)} test(s) skipped, and the full lane skips "
                "nothing; install what they need or remove the skip: " + ", ".join(self.skipped),
                red=True,
            )


class _FileDurations:
    """``--slowest-files N``: the test files whose tests took longest, summed per file."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.seconds: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # Under xdist the workers' reports are replayed here, in the controller.
        self.seconds[report.nodeid.split("::")[0]] += report.duration

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.write_sep("=", f"slowest {self.count} test files")
        total = sum(self.seconds.values())
        for path, seconds in self.seconds.most_common(self.count):
            terminalreporter.write_line(f"{seconds:7.2f}s {100 * seconds / total:5.1f}%  {path}")
        terminalreporter.write_line(f"{total:7.2f}s in all, in {len(self.seconds)} files")
