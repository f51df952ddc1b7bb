"""Real MCP clients (Claude Code, Codex, opencode) against `presets serve` (docs/clients.md).

Each test runs one of the client drivers (`claudecode-drive`, `codex-drive`,
`opencode-drive`: the real CLI with a scripted fake model, in a network
namespace) and requires its verdict to be ok. The drivers are not part of
this repository and need root, `ip netns` and npm, and CI installs none of
the three CLIs: set `PRESETS_CLIENT_DRIVES` to the folder that holds the
drivers to run these. Without it the whole module is skipped while it is
collected, with the reason in the summary: the full lane fails on a skipped
test (tests/conftest.py), and these cannot run there.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import serve_command, server_env

DRIVES = "PRESETS_CLIENT_DRIVES"
RUN_TIMEOUT = 600.0

if not os.environ.get(DRIVES):
    pytest.skip(
        f"{DRIVES} is not set: it names the folder holding the client drivers "
        "(claudecode-drive/, codex-drive/, opencode-drive/; outside this repository, "
        "they need root, ip netns and npm)",
        allow_module_level=True,
    )

DRAW = [
    {"tool": "app_switch_surface", "args": {"surface": "canvas"}},
    {"tool": "app_set_activity", "args": {"activity": "drawing"}},
    {
        "tool": "drawing_insert_shape",
        "args": {"shape": "rect", "x": 10, "y": 10, "width": 20, "height": 20},
    },
    {"tool": "drawing_inspect", "args": {}},
]
DRAW_CALLS = ["space_app_switch_surface", "space_app_set_activity", "space_drawing_insert_shape"]
DRAW_EXPECT = {
    "start_absent": ["drawing_insert_shape"],
    "end_present": ["drawing_insert_shape"],
    "server_ok_calls": DRAW_CALLS,
    "relist": True,
}


def driver(client: str) -> Path:
    """``drive.sh`` of ``CLIENT-drive``, or a skip that says what is missing."""
    script = Path(os.environ[DRIVES]) / f"{client}-drive" / "drive.sh"
    if not script.is_file():
        pytest.skip(f"{DRIVES} has no {client}-drive/drive.sh")
    if os.geteuid() != 0:
        pytest.skip(f"{client}-drive needs root for its network namespace")
    for tool in ("ip", "npm", "bash"):
        if shutil.which(tool) is None:
            pytest.skip(f"{client}-drive needs {tool}, which is not on PATH")
    return script


def run_drive(
    client: str,
    server: list[str],
    script: list[dict[str, Any]],
    expect: dict[str, Any],
    tmp_path: Path,
    **env: str,
) -> str:
    """Run the driver; its report, which must end with ``CLIENT e2e: ok``."""
    drive = driver(client)
    script_file, expect_file = tmp_path / "script.json", tmp_path / "expect.json"
    script_file.write_text(json.dumps(script))
    expect_file.write_text(json.dumps(expect))
    done = subprocess.run(
        ["bash", str(drive), json.dumps(server), str(script_file), str(expect_file)],
        env={**server_env(), **env},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    report = done.stdout + done.stderr
    verdict = report.strip().splitlines()[-1] if report.strip() else ""
    assert verdict.startswith(f"{client} e2e: ok"), report[-4000:]
    return report


def first_request(work: Path) -> dict[str, Any]:
    """The fake model's log line for Claude Code's first scripted request."""
    for line in (work / "llm.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("scripted"):
            return dict(row)
    raise AssertionError(f"no scripted model request in {work / 'llm.jsonl'}")


def test_claude_code_draws_relisting_after_each_switch_with_no_mcp_error(tmp_path: Path) -> None:
    # --delivery live: the list follows Claude Code's own switches, as before stable delivery
    # (the driver's scripted model calls only listed tools; bench/clients.py drives stable).
    state = tmp_path / "state"
    report = run_drive(
        "claudecode",
        serve_command("--state-dir", str(state), "--surface", "scene", "--delivery", "live"),
        DRAW,
        DRAW_EXPECT,
        tmp_path,
        CC_EVENTS=str(state / "events.jsonl"),
    )
    # Not even the driver's tolerated one: the listen request open when Claude
    # Code stops the server with SIGINT ends with its result.
    assert "server error" not in report, report[-4000:]


def test_claude_code_on_a_server_slower_than_its_probe_connects_with_no_mcp_error(
    tmp_path: Path,
) -> None:
    # Started 3.5 s late: Claude Code's probe times out and it sends initialize,
    # which used to be refused with -32022 (issue 17).
    state = tmp_path / "state"
    late = shlex.join(
        serve_command("--state-dir", str(state), "--surface", "scene", "--delivery", "live")
    )
    report = run_drive(
        "claudecode",
        ["sh", "-c", f"sleep 3.5; exec {late}"],
        DRAW,
        DRAW_EXPECT,
        tmp_path,
        CC_EVENTS=str(state / "events.jsonl"),
    )
    methods = next(line for line in report.splitlines() if "client methods:" in line)
    assert "initialize" in methods, report[-4000:]
    assert "server error" not in report, report[-4000:]


def test_claude_code_gets_the_budgeted_tools_without_a_search(tmp_path: Path) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    script = [
        {"tool": "scene_add_cuboid", "args": {"position": [0, 0.5, 0], "size": [1, 1, 1]}},
        {"tool": "presets_search", "args": {"query": "switch to the 2D canvas"}},
        {
            "tool": "presets_call",
            "args": {"name": "space_app_switch_surface", "arguments": {"surface": "canvas"}},
        },
    ]
    run_drive(
        "claudecode",
        serve_command(
            "--state-dir", str(state), "--surface", "scene", "--tool-budget", "2600"
        ),
        script,
        {
            "start_absent": ["app_switch_surface"],
            "server_ok_calls": [
                "space_scene_add_cuboid", "space_presets_search", "space_app_switch_surface",
            ],
        },
        tmp_path,
        CC_EVENTS=str(state / "events.jsonl"),
        CC_WORK=str(work),
    )  # fmt: skip
    first = first_request(work)
    loaded = {name for name in first["tools"] if name.startswith("mcp__presets__")}
    assert {"mcp__presets__space_scene_add_cuboid", "mcp__presets__space_presets_search"} <= loaded
    assert not loaded & set(first["defer_flagged"])
    assert first["call"] == "mcp__presets__space_scene_add_cuboid"  # no ToolSearch first


def test_codex_that_never_relists_draws_through_search_and_call(tmp_path: Path) -> None:
    state = tmp_path / "state"
    script = [
        {"tool": "presets_search", "args": {"query": "draw an ellipse"}},
        {
            "tool": "presets_call",
            "args": {"name": "space_app_switch_surface", "arguments": {"surface": "canvas"}},
        },
        {
            "tool": "presets_call",
            "args": {"name": "space_app_set_activity", "arguments": {"activity": "drawing"}},
        },
        {
            "tool": "presets_call",
            "args": {
                "name": "space_drawing_insert_shape",
                "arguments": {"shape": "ellipse", "x": 10, "y": 10, "width": 30, "height": 20},
            },
        },
    ]
    report = run_drive(
        "codex",
        serve_command("--state-dir", str(state), "--surface", "scene"),
        script,
        {
            "start_present": ["presets_search", "presets_call"],
            "start_absent": ["drawing_insert_shape"],
            "server_ok": ["space_presets_search", *DRAW_CALLS],
        },
        tmp_path,
        CX_EVENT_LOG=str(state / "events.jsonl"),
        # Without it Codex asks its model after about 0.9 s, tools or not (docs/clients.md).
        CX_EXEC_FLAGS="-c mcp_servers.presets.required=true",
    )
    assert "0 tools/list after the first list_changed" in report, report[-4000:]


def test_stock_codex_is_offered_the_start_contexts_tools(tmp_path: Path) -> None:
    # No `required`: Codex asks its model about 0.9 s after spawning the server, and the
    # server answers its handshake and first tools/list before the SDK has loaded (issue 28).
    state = tmp_path / "state"
    # A state folder made by an earlier start, as a user's is: the first start does more.
    command = serve_command("--state-dir", str(state), "--surface", "scene")
    subprocess.run(command, input="", capture_output=True, text=True, timeout=120, check=True)
    run_drive(
        "codex",
        command,
        [{"tool": "scene_add_cuboid", "args": {"position": [0, 0.5, 0], "size": [1, 1, 1]}}],
        {"start_present": ["scene_add_cuboid"], "server_ok": ["space_scene_add_cuboid"]},
        tmp_path,
        CX_EVENT_LOG=str(state / "events.jsonl"),
    )


def test_opencode_draws_relisting_after_each_switch(tmp_path: Path) -> None:
    run_drive(
        "opencode",
        serve_command(
            "--state-dir", str(tmp_path / "state"), "--surface", "scene", "--delivery", "live"
        ),
        DRAW,
        {"start_absent": ["drawing_insert_shape"], "end_present": ["drawing_insert_shape"]},
        tmp_path,
    )
