"""`presets serve` answers its start before the SDK has loaded, with the full server's bytes.

Each test runs `presets serve` twice on the same lines: with the start front
(the default) and without it (``PRESETS_START_FRONT=0``: the full server
answers everything, as before the front existed). The answers must be the
same bytes, and the banner must say what the front answered: the handshake
of both eras, and the first `tools/list`, `prompts/list` and
`resources/list`, for the clients that matter (Codex, opencode, Claude Code)
and under each thing that changes what they list (context, saved state,
flags, plugins, preset files). A change between two starts changes the
answer, and the front's answer follows it: nothing is stale.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from greet_plugin import GREET_MODULE, GREET_PRESETS

from agent_presets.server.delivery import choose

from .conftest import serve_command, server_env, terminate

pytestmark = pytest.mark.slow

ANSWER_TIMEOUT = 120.0

CLIENTS = {
    # What each client says of itself, and the protocol version it asks for.
    "codex": ({"name": "codex-mcp-client", "title": "Codex", "version": "0.171.0"}, "2025-06-18"),
    "opencode": ({"name": "opencode", "version": "1.1.3"}, "2025-11-25"),
    "claude-code": ({"name": "claude-code", "version": "2.1.332"}, "2025-11-25"),
}
LISTS = ("tools/list", "prompts/list", "resources/list")


def opening(era: str, client: str) -> list[dict[str, Any]]:
    """The first messages of a client that does not wait between them."""
    info, version = CLIENTS[client]
    if era == "legacy":
        capabilities = (
            {"elicitation": {}} if client == "codex" else {"roots": {"listChanged": True}}
        )
        init = {"protocolVersion": version, "capabilities": capabilities, "clientInfo": info}
        # Codex 0.171.0 sends its lists with a progress token.
        progress = {"params": {"_meta": {"progressToken": 0}}} if client == "codex" else {}
        return [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": i, "method": m, **progress} for i, m in enumerate(LISTS, 1)),
        ]
    meta = {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": info,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    }
    return [
        {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": meta},
        *({"jsonrpc": "2.0", "id": i, "method": m, "params": meta} for i, m in enumerate(LISTS, 1)),
    ]


def exchange(
    args: list[str], messages: list[dict[str, Any]], *, front: bool = True, **env: str
) -> tuple[dict[Any, str], str]:
    """Send ``messages`` at once; the answer line to each request by id, and the banner."""
    environment = {**server_env(), **env}
    if not front:
        environment["PRESETS_START_FRONT"] = "0"
    process = subprocess.Popen(
        serve_command(*args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    assert process.stdin is not None and process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stderr: list[str] = []

    def pump_err() -> None:
        assert process.stderr is not None
        stderr.extend(process.stderr)

    def pump_out() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put("")  # the server has ended

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    wanted = {m["id"] for m in messages if "id" in m}
    answers: dict[Any, str] = {}
    try:
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while set(answers) != wanted:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line, f"the server ended with {sorted(wanted - set(answers))} unanswered"
            message = json.loads(line)
            if "id" in message:
                assert message["id"] not in answers, f"answered twice: {line}"
                answers[message["id"]] = line
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            terminate(process)
    time.sleep(0.1)
    err = "".join(stderr)
    assert "differs from the full server" not in err, err
    return answers, err


def banner(err: str) -> str:
    return next((line for line in err.splitlines() if line.startswith("presets serve:")), "")


def same_as_full_server(
    args: list[str], messages: list[dict[str, Any]], **env: str
) -> tuple[dict[Any, str], str]:
    """The front's answers, checked equal to the full server's; and its banner."""
    fast, err = exchange(args, messages, **env)
    full, _ = exchange(args, messages, front=False, **env)
    assert fast == full
    return fast, banner(err)


def answered(note: str, era: str, lists: tuple[str, ...] = LISTS) -> None:
    opener = "initialize" if era == "legacy" else "server/discover"
    assert f"answered {', '.join((opener, *lists))} before the SDK loaded" in note, note


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_front_answers_each_client_with_the_full_servers_bytes(
    tmp_path: Path, era: str, client: str
) -> None:
    # The defaults (--delivery auto, --discovery auto): a stable caller (delivery.choose) is
    # listed the tools active now and the discovery tools; a live one, the tools active now.
    args = ["--state-dir", str(tmp_path / "state")]
    answers, note = same_as_full_server(args, opening(era, client))
    answered(note, era)
    live = choose("auto", modern=era == "modern", client=CLIENTS[client][0]["name"]) == "live"
    assert ("space_presets_call_risky" in answers[1]) is not live
    tools = json.loads(answers[1])["result"]["tools"]
    assert "space_presets_request" in {t["name"] for t in tools}


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(
    "flags",
    [
        ["--surface", "canvas", "--activity", "drawing"],
        ["--allow", "space_app_switch_surface", "--allow", "scene-object-tools"],
        ["--namespace", "myapp_", "--surface", "canvas"],
        ["--discovery", "search"],
        ["--on", "general-theme-tools", "--off", "scene-object-tools"],
    ],
    ids=["context", "allow", "namespace", "search", "overrides"],
)
def test_each_flag_changes_the_answer_and_the_front_follows_it(
    tmp_path: Path, era: str, flags: list[str]
) -> None:
    base = ["--state-dir", str(tmp_path / "base"), "--discovery", "list", "--delivery", "live"]
    plain, _ = same_as_full_server(base, opening(era, "codex"))
    live = ["--discovery", "list", "--delivery", "live"]
    if "--discovery" in flags:
        live = ["--delivery", "live"]
    args = ["--state-dir", str(tmp_path / "state"), *live, *flags]
    changed, note = same_as_full_server(args, opening(era, "codex"))
    answered(note, era)
    assert changed[1] != plain[1]  # the tool list moved with the flag


def test_a_saved_context_is_answered_as_the_full_server_resumes_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = ["--state-dir", str(state), "--discovery", "list", "--delivery", "live"]
    before, _ = same_as_full_server(first, opening("legacy", "codex"))
    # A run that moves the context saves it; the next start resumes it with no flag.
    moved = [*first, "--surface", "canvas", "--activity", "drawing"]
    same_as_full_server(moved, opening("legacy", "codex"))
    after, note = same_as_full_server(first, opening("legacy", "codex"))
    answered(note, "legacy")
    assert after[1] != before[1]
    assert "space_drawing_insert_shape" in after[1]


def test_plugins_and_preset_files_change_the_answer_and_the_front_follows(tmp_path: Path) -> None:
    args = ["--state-dir", str(tmp_path / "state"), "--discovery", "list", "--delivery", "live"]
    everything, _ = same_as_full_server(args, opening("legacy", "opencode"))
    # Fewer plugins.
    fewer, note = same_as_full_server(
        args, opening("legacy", "opencode"), PRESETS_LOAD_PLUGINS="general"
    )
    answered(note, "legacy")
    assert fewer[1] != everything[1] and "space_scene_" not in fewer[1]
    # A plugin folder: a module and its preset file...
    folder = tmp_path / "extras"
    folder.mkdir()
    (folder / "greet.py").write_text(GREET_MODULE)
    (folder / "greet.yaml").write_text(GREET_PRESETS)
    extra = [*args, "--plugins-dir", str(folder)]
    greeted, note = same_as_full_server(extra, opening("legacy", "opencode"))
    answered(note, "legacy")
    assert "space_greet_hello" in greeted[1]
    # ...whose preset file, changed between two starts, changes the list.
    (folder / "greet.yaml").write_text(GREET_PRESETS.replace("surface: any", "surface: canvas"))
    changed, note = same_as_full_server(extra, opening("legacy", "opencode"))
    answered(note, "legacy")
    assert "space_greet_hello" not in changed[1]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_requests_after_the_first_lines_are_served_in_order_by_the_full_server(
    tmp_path: Path, era: str
) -> None:
    messages = opening(era, "opencode")
    params = messages[-1].get("params", {})
    call = {
        "jsonrpc": "2.0",
        "id": 10,
        "method": "tools/call",
        "params": {
            **params,
            "name": "space_app_switch_surface",
            "arguments": {"surface": "canvas"},
        },
    }
    again = {
        "jsonrpc": "2.0",
        "id": 11,
        "method": "tools/list",
        **({"params": params} if params else {}),
    }
    args = [
        "--state-dir",
        str(tmp_path / "state"),
        "--discovery",
        "list",
        "--delivery",
        "live",
        "--surface",
        "scene",
    ]
    answers, err = exchange(args, [*messages, call, again])
    answered(banner(err), era)
    first = {t["name"] for t in json.loads(answers[1])["result"]["tools"]}
    assert json.loads(answers[10])["result"]["isError"] is False
    after = {t["name"] for t in json.loads(answers[11])["result"]["tools"]}
    # The list after the call is the canvas's: the call ran before it, as sent.
    assert "space_scene_add_cuboid" in first and "space_scene_add_cuboid" not in after


def test_without_a_front_the_banner_says_nothing_of_it(tmp_path: Path) -> None:
    args = ["--state-dir", str(tmp_path / "state")]
    _, err = exchange(args, opening("legacy", "opencode"), front=False)
    assert "before the SDK loaded" not in banner(err)


def test_an_unknown_request_first_is_left_to_the_full_server(tmp_path: Path) -> None:
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "ping"},
        *opening("legacy", "opencode"),
    ]
    messages[1]["id"] = 100  # initialize, after a ping
    answers, note = same_as_full_server(["--state-dir", str(tmp_path / "state")], messages)
    assert "before the SDK loaded" not in note
    assert set(answers) == {0, 100, 1, 2, 3}
