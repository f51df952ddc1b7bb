"""space_app_run_bash: exit codes, output, the root as working folder, timeouts and caps."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from host_processes import sleepers_after

from agent_presets import ToolArgumentError, ToolCallError
from agent_presets_general.bash import BashRunner

if TYPE_CHECKING:
    from conftest import GeneralApp


def test_reports_exit_code_stdout_and_stderr(powered_app: GeneralApp) -> None:
    result = powered_app.call("space_app_run_bash", command="echo out; echo err >&2; exit 7")
    assert result["exit_code"] == 7
    assert result["stdout"] == "out\n"
    assert result["stderr"] == "err\n"
    assert result["timed_out"] is False
    assert result["stdout_truncated"] is result["stderr_truncated"] is False


def test_runs_in_the_file_root(powered_app: GeneralApp) -> None:
    (powered_app.root / "hello.txt").write_text("hi from the root")
    result = powered_app.call("space_app_run_bash", command="pwd; cat hello.txt")
    assert result["stdout"] == f"{powered_app.root}\nhi from the root"
    assert result["exit_code"] == 0


def test_has_no_stdin(powered_app: GeneralApp) -> None:
    result = powered_app.call("space_app_run_bash", command="cat; echo done", timeout_seconds=5)
    assert result["stdout"] == "done\n"
    assert result["timed_out"] is False


# The background children are found by a marker in their arguments, so a test sees them
# gone at once rather than waiting to see that they did nothing.


def test_timeout_kills_the_whole_process_group(powered_app: GeneralApp) -> None:
    marker = f"{uuid.uuid4().int % 10**6}"
    started = time.monotonic()
    result = powered_app.call(
        "space_app_run_bash",
        command=f"(exec sleep 30.{marker}) & echo started; sleep 31.{marker}",
        timeout_seconds=0.5,
    )
    assert time.monotonic() - started < 5
    assert result["timed_out"] is True
    assert result["exit_code"] == -9
    assert result["stdout"] == "started\n"
    assert sleepers_after(f".{marker}") == [], "the background child outlived the timeout"


def test_background_processes_do_not_outlive_the_command(powered_app: GeneralApp) -> None:
    marker = f"{uuid.uuid4().int % 10**6}"
    result = powered_app.call(
        "space_app_run_bash", command=f"(exec sleep 30.{marker}) >/dev/null 2>&1 & echo ok"
    )
    assert result["exit_code"] == 0
    assert result["timed_out"] is False
    assert sleepers_after(f".{marker}") == []


def test_output_is_capped_and_says_so(powered_app: GeneralApp) -> None:
    result = powered_app.call(
        "space_app_run_bash", command="head -c 300000 /dev/zero | tr '\\0' x; echo tail >&2"
    )
    assert result["stdout_truncated"] is True
    assert result["stdout"].startswith("x" * 65536)
    assert result["stdout"].endswith("[output truncated: 234464 more bytes were not kept]")
    assert result["stderr"] == "tail\n"
    assert result["stderr_truncated"] is False
    assert result["exit_code"] == 0


def test_endless_output_is_drained_without_filling_memory(
    shell_sandbox: None, tmp_path: Path
) -> None:
    runner = BashRunner(tmp_path, output_cap=100)
    result = runner.run("yes", timeout_seconds=0.5)
    assert result["timed_out"] is True
    assert result["stdout"].startswith("y\n" * 50)
    assert result["stdout_truncated"] is True


def test_timeout_is_bounded_by_the_schema_and_capped_in_the_runner(
    powered_app: GeneralApp, tmp_path: Path
) -> None:
    with pytest.raises(ToolArgumentError, match="timeout_seconds"):
        powered_app.call("space_app_run_bash", command="true", timeout_seconds=121)
    with pytest.raises(ToolArgumentError, match="timeout_seconds"):
        powered_app.call("space_app_run_bash", command="true", timeout_seconds=0)
    assert BashRunner(tmp_path, max_timeout=2).run("true", 500)["timeout_seconds"] == 2


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), float("-inf")])
def test_a_timeout_that_is_not_a_number_is_refused(
    shell_sandbox: None, tmp_path: Path, timeout: float
) -> None:
    with pytest.raises(ToolCallError, match="timeout_seconds must be a number of seconds"):
        BashRunner(tmp_path).run("sleep 30", timeout)


def test_empty_command_is_refused(powered_app: GeneralApp) -> None:
    with pytest.raises(ToolArgumentError):
        powered_app.call("space_app_run_bash", command="")
    with pytest.raises(ToolCallError, match="command is empty"):
        powered_app.call("space_app_run_bash", command="   ")


def test_bash_is_offered_only_after_the_shell_preset_is_turned_on(
    shell_sandbox: None,
    general_app: GeneralApp,
) -> None:
    assert "space_app_run_bash" not in general_app.tools()
    general_app.enable("general-shell-tools")
    assert general_app.call("space_app_run_bash", command="echo $((6*7))")["stdout"] == "42\n"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_timeout_is_refused_before_anything_runs(
    powered_app: GeneralApp, text: str
) -> None:
    # What Python's json reads from a client; `type: number` with bounds let NaN through.
    arguments = json.loads(f'{{"command": "touch ran", "timeout_seconds": {text}}}')
    tool = powered_app.tools()["space_app_run_bash"]
    with pytest.raises(ToolArgumentError) as info:
        tool.run(arguments)
    assert str(info.value) == (
        f"space_app_run_bash: argument 'timeout_seconds': {text} is not a number; "
        "give a finite number"
    )
    assert not (powered_app.root / "ran").exists()
