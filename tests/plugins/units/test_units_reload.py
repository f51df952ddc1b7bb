"""Reloading a unit runs it in a process of its own, sandboxed where the sandbox works.

Each reload starts a Python process (under bubblewrap when it works), so these
tests are in the full lane. What a unit did is checked from the host: the
files it left in the file root, the status the tool reports.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets import ToolCallError
from agent_presets_general.sandbox import SandboxLimits, sandbox_status
from agent_presets_units import UnitFolder
from agent_presets_units.adapters import RELOAD_OUTPUT
from agent_presets_units.loading import UnitLoader, _checked
from agent_presets_units.loadproc import MODULE_PREFIX

if TYPE_CHECKING:
    from conftest import UnitsApp

pytestmark = pytest.mark.slow

SANDBOXED = sandbox_status()[0]
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="bubblewrap does not work here")

GREET = (
    '"""Greetings."""\n\n\ndef greet(name: str) -> str:\n    """Say hello."""\n'
    '    return f"hello {name}"\n'
)
# A unit that leaves what it saw in the file root (its working folder).
WITNESS = """\
import json, os, sys
with open("witness.json", "w") as out:
    json.dump({"pid": os.getpid(), "env": dict(os.environ), "cwd": os.getcwd(),
               "modules": sorted(sys.modules), "name": __name__}, out)
"""


def witness(app: UnitsApp) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((app.host.root / "witness.json").read_text())
    return data


def test_a_unit_loads_in_a_process_of_its_own(
    editing_app: UnitsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVER_SECRET", "s3cret-of-the-server")
    editing_app.call("space_unit_create", name="greeter", source=GREET + WITNESS)
    result = editing_app.call("space_unit_reload", name="greeter")
    assert result["status"]["state"] == "loaded"
    assert result["status"]["stale"] is False
    assert result["defines"] == ["greet", "json", "os", "out", "sys"]
    seen = witness(editing_app)
    assert seen["pid"] != os.getpid()
    assert seen["cwd"] == str(editing_app.host.root.resolve())
    assert seen["name"] == f"{MODULE_PREFIX}greeter"
    # A fixed environment, and none of the server's packages: a fresh interpreter.
    assert "SERVER_SECRET" not in seen["env"]
    assert not any(m.startswith("agent_presets") for m in seen["modules"])
    assert not any(m.startswith(MODULE_PREFIX) for m in sys.modules)


@needs_sandbox
def test_a_sandboxed_unit_writes_only_the_root_and_sees_no_state(
    editing_app: UnitsApp, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    planted = editing_app.state_dir / "planted.txt"
    source = f"""\
import json, os, pathlib
for target in [{str(outside)!r}, {str(planted)!r}, "/usr/planted", "/planted"]:
    try:
        pathlib.Path(target).write_text("escaped")
    except OSError:
        pass
pathlib.Path("inside.txt").write_text(json.dumps(
    [os.path.exists({str(editing_app.state_dir / "state.db")!r}), os.path.exists(__file__)]
))
"""
    editing_app.call("space_unit_create", name="prisoner", source=source)
    status = editing_app.call("space_unit_reload", name="prisoner")["status"]
    assert status["state"] == "loaded", status
    # What a unit writes outside the root lands nowhere on the host (a write
    # under /tmp goes to the sandbox's private /tmp), and the state (the default root
    # lies beside it) and the unit's own file are not there.
    assert not outside.exists()
    assert not planted.exists()
    assert not Path("/usr/planted").exists() and not Path("/planted").exists()
    state_seen, own_file_seen = json.loads((editing_app.host.root / "inside.txt").read_text())
    assert (state_seen, own_file_seen) == (False, False)


def test_a_broken_unit_reports_its_error_and_a_fixed_one_loads(editing_app: UnitsApp) -> None:
    source = "x = 1\n\ndef f():\n    return 1\n\nraise RuntimeError('boom at import')\n"
    editing_app.call("space_unit_create", name="shaky", source=source)
    result = editing_app.call("space_unit_reload", name="shaky")
    assert "defines" not in result
    error = result["status"]["error"]
    assert result["status"]["state"] == "error"
    assert error["type"] == "RuntimeError"
    assert "boom at import" in error["message"]
    assert error["line"] == 6
    assert "shaky.py" in error["traceback"]
    assert editing_app.call("space_unit_list")["units"][0]["status"]["state"] == "error"

    editing_app.call("space_unit_edit", name="shaky", source="x = 2\n")
    assert editing_app.call("space_unit_list")["units"][0]["status"]["stale"] is True
    result = editing_app.call("space_unit_reload", name="shaky")
    assert result["status"] == {"state": "loaded", "at": result["status"]["at"], "stale": False}
    assert result["defines"] == ["x"]


def test_a_syntax_error_is_reported_with_its_line(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="typo", source="a = 1\nb = [\n", check_syntax=False)
    error = editing_app.call("space_unit_reload", name="typo")["status"]["error"]
    assert (error["type"], error["line"]) == ("SyntaxError", 2)
    assert set(error) == {"type", "message", "line", "column", "text"}
    assert editing_app.call("space_unit_inspect", name="typo")["status"]["state"] == "error"


@pytest.mark.parametrize(
    ("source", "kind", "says"),
    [
        ("import sys\nsys.exit(3)\n", "SystemExit", "3"),
        ("import os\nos._exit(0)\n", "LoadProcessError", "exit code 0 without reporting"),
        (
            "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
            "LoadProcessError",
            "SIGKILL",
        ),
        ("raise KeyboardInterrupt\n", "KeyboardInterrupt", "KeyboardInterrupt"),
    ],
)
def test_a_unit_that_quits_or_dies_is_an_error_and_the_host_keeps_working(
    editing_app: UnitsApp, source: str, kind: str, says: str
) -> None:
    editing_app.call("space_unit_create", name="quitter", source=source)
    error = editing_app.call("space_unit_reload", name="quitter")["status"]["error"]
    assert error["type"] == kind
    assert says in error["message"]
    assert editing_app.call("space_unit_list")["units"][0]["status"]["state"] == "error"


def test_a_unit_that_never_returns_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    units = UnitFolder(tmp_path / "units", loader=UnitLoader(tmp_path / "root", timeout=1))
    units.create("spinner", "import time\nwhile True:\n    time.sleep(0.01)\n")
    error = units.reload("spinner")["status"]["error"]
    assert error["type"] == "TimeoutError"
    assert "within 1 s" in error["message"]


@needs_sandbox
def test_a_load_is_held_to_the_shell_sandboxs_limits(tmp_path: Path) -> None:
    limits = SandboxLimits(file_bytes=1024 * 1024, processes=32)
    units = UnitFolder(tmp_path / "units", loader=UnitLoader(tmp_path / "root", limits=limits))
    units.create("big", 'with open("big.bin", "wb") as f:\n    f.write(bytes(2 * 1024 * 1024))\n')
    error = units.reload("big")["status"]["error"]
    assert error["type"] in ("OSError", "LoadProcessError"), error  # EFBIG, or SIGXFSZ
    assert (tmp_path / "root" / "big.bin").stat().st_size <= 1024 * 1024
    forks = (
        "import os, time\n"
        "for _ in range(200):\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(5)\n"
        "        os._exit(0)\n"
    )
    units.create("forks", forks)
    error = units.reload("forks")["status"]["error"]
    assert error["type"] in ("BlockingIOError", "OSError"), error  # the fork loop is stopped


def test_each_reload_runs_the_current_source(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="counter", source="VALUE = 1\n")
    for value in range(1, 4):
        source = f"VALUE = {value}\nopen('value.txt', 'w').write(str(VALUE))\n"
        editing_app.call("space_unit_edit", name="counter", source=source)
        editing_app.call("space_unit_reload", name="counter")
        assert (editing_app.host.root / "value.txt").read_text() == str(value)
    assert not (editing_app.unit_dir / "__pycache__").exists()


def test_units_persist_across_a_restart(editing_app: UnitsApp) -> None:
    editing_app.call("space_unit_create", name="greeter", source=GREET)
    editing_app.call("space_unit_reload", name="greeter")
    again = editing_app.restart()
    # The source survives; nothing has loaded in the new server until it is reloaded.
    assert again.call("space_unit_list")["units"] == [
        {"name": "greeter", "size": len(GREET), "status": {"state": "never-loaded"}}
    ]
    again.enable_all()
    assert again.call("space_unit_reload", name="greeter")["status"]["state"] == "loaded"


def test_without_a_sandbox_a_reload_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    loader = UnitLoader(tmp_path / "root", bwrap=str(tmp_path / "no-bwrap"))
    units = UnitFolder(tmp_path / "units", loader=loader)
    units.create("mark", "open('ran.txt', 'w').write('ran')\n")
    with pytest.raises(ToolCallError, match=r"bubblewrap.*--unsafe-shell.*Units are not loaded"):
        units.reload("mark")
    assert units.status("mark").state == "never-loaded"
    assert not (tmp_path / "root" / "ran.txt").exists()
    assert loader.status()[0] is False


def test_unsafe_loads_unconfined_but_still_in_a_process_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVER_SECRET", "s3cret-of-the-server")
    root = tmp_path / "root"
    loader = UnitLoader(root, bwrap=str(tmp_path / "no-bwrap"), unsafe=True)
    units = UnitFolder(tmp_path / "units", loader=loader)
    units.create("mark", WITNESS)
    assert units.reload("mark")["status"]["state"] == "loaded"
    seen = json.loads((root / "witness.json").read_text())
    assert seen["pid"] != os.getpid()
    assert "SERVER_SECRET" not in seen["env"]
    assert loader.status() == (
        True,
        "in a fresh Python process, unconfined: the sandbox does not work here",
    )


def test_serve_unsafe_shell_reaches_the_unit_loader(tmp_path: Path) -> None:
    # The way `presets serve --unsafe-shell` goes: the general plugin's serve
    # options parse the flag and build its ShellOptions, the host is handed it.
    import click

    import agent_presets_general
    import agent_presets_units
    from agent_presets_general import SpaceHost

    options = agent_presets_general.presets_serve_options()
    command = click.Command("serve", params=list(options.options))
    parsed = command.make_context("serve", ["--unsafe-shell"]).params
    with SpaceHost(tmp_path / "state", serve_options=[options.build(**parsed)]) as host:
        host.start([agent_presets_units])
        loader = host.runtime("units").loader
        assert (loader.unsafe, loader.root) == (True, host.root.resolve())


def test_without_unsafe_shell_the_unit_loader_stays_confined(tmp_path: Path) -> None:
    import agent_presets_units
    from agent_presets_general import SpaceHost

    with SpaceHost(tmp_path / "state") as host:
        host.start([agent_presets_units])
        assert host.runtime("units").loader.unsafe is False


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=9), inner),
    max_leaves=8,
)
KEYS = st.sampled_from(["type", "message", "line", "column", "text", "traceback", "x"])
REPORTS = st.fixed_dictionaries(
    {
        "state": st.sampled_from(["loaded", "error", "other"]),
        "defines": st.lists(st.text(max_size=5)) | JSON,
        "error": st.dictionaries(KEYS, JSON | st.text(max_size=5)),
    }
)


@settings(max_examples=examples(300), deadline=None)
@given(report=REPORTS | JSON, raw=st.binary(max_size=20))
def test_whatever_a_unit_reports_the_tool_result_keeps_its_schema(report: Any, raw: bytes) -> None:
    # A unit runs in the process that writes the report, so it can forge any bytes there.
    for data in (json.dumps(report).encode(), raw):
        checked = _checked(data)
        if checked is None:
            continue
        result: dict[str, Any] = {"name": "u", "status": {"state": checked["state"]}}
        result["status"].update(at="2026-01-01T00:00:00+00:00", stale=False)
        if "error" in checked:
            result["status"]["error"] = checked["error"]
        if "defines" in checked:
            result["defines"] = checked["defines"]
        jsonschema.validate(result, dict(RELOAD_OUTPUT))
