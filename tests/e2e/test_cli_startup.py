"""The executable's start-up with the garbage collector paused (``agent_presets._startup``).

``presets`` pauses the cyclic collector before it imports anything and a
command resumes it once its start-up is over. What a user would notice if
that went wrong: a server, or a long command, that never collects cycles
again and grows. So each test asks the collector's state where it matters,
in the real executable.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from agent_presets import _startup

from .conftest import serve_command, server_env

# A folder plugin whose tool tells what the collector of the process serving it is doing.
COLLECTOR_MODULE = """\
import gc
import json

from agent_presets import ToolAdapter, hookimpl


def _collector(app, arguments):
    return json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()})


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "probe.collector",
            description="Say whether this process collects garbage.",
            input_schema={"type": "object", "properties": {}},
            handler=_collector,
        )
    ]
"""

COLLECTOR_PRESETS = """\
presets:
  - name: probe-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [probe.collector]
"""


@pytest.mark.anyio
async def test_a_serving_process_collects_garbage_and_froze_its_start_up(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "probe.py").write_text(COLLECTOR_MODULE, encoding="utf-8")
    (plugins / "probe.yaml").write_text(COLLECTOR_PRESETS, encoding="utf-8")
    command = serve_command("--state-dir", str(tmp_path / "state"), "--plugins-dir", str(plugins))
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env())
    async with Client(stdio_client(params)) as client:
        result = await client.call_tool("space_probe_collector", {})
    assert not result.is_error, result
    state = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert state["enabled"] is True  # collecting again while it serves
    # What start-up made is out of the collector's view: tens of thousands of objects.
    assert state["frozen"] > 10_000


@pytest.mark.parametrize("how", ["module", "entry"])
def test_a_command_other_than_serve_resumes_the_collector(how: str, tmp_path: Path) -> None:
    # `python -m agent_presets list` and the console script's entry (__main__.main); the
    # collector's state is read when the command is done, as a long command would run.
    start = (
        "import runpy; runpy.run_module('agent_presets', run_name='__main__')"
        if how == "module"
        else "from agent_presets.__main__ import main; main()"
    )
    script = textwrap.dedent(
        f"""
        import atexit, gc, sys
        atexit.register(lambda: print("collector", gc.isenabled(), file=sys.stderr))
        sys.argv = ["presets", "list", "--json"]
        {start}
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)  # the command did its work
    assert done.stderr.strip().splitlines()[-1] == "collector True"


def test_resume_leaves_a_collector_it_did_not_pause_as_it_was() -> None:
    # An embedder (or a test) that imports the command line and turned the collector off.
    gc.disable()
    try:
        _startup.resume()
        assert not gc.isenabled()
        assert not _startup.paused()
    finally:
        gc.enable()
    _startup.resume()  # and one that is on stays on, unfrozen by us
    assert gc.isenabled()
