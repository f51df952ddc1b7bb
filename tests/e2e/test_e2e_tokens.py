"""Bearer tokens with profiles: `presets tokens` and `presets serve --auth tokens` end to end."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent_presets.cli import main
from agent_presets.server.events import read_events

from .conftest import HttpServer, serve_command, server_env

pytestmark = pytest.mark.anyio

REALM = 'Bearer realm="agent-presets"'


def presets_command(*args: str) -> list[str]:
    command = serve_command()
    return [*command[:-1], *args]  # the same executable, another subcommand


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        presets_command(*args), capture_output=True, text=True, env=server_env(), timeout=120
    )


def create(state: Path, name: str, *flags: str) -> str:
    done = run("tokens", "create", name, "--state-dir", str(state), *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def post(url: str, body: dict[str, Any], token: str | None = None) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request("POST", parts.path, json.dumps(body), headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


def refused_as(url: str, token: str | None) -> str:
    """The ``reason`` of a 401 for ``token``, after checking the challenge header."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    conn.request("POST", parts.path, json.dumps(INITIALIZE), headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 401, (response.status, body)
    assert response.getheader("WWW-Authenticate") == REALM
    assert response.getheader("Content-Type") == "application/json"
    return str(json.loads(body)["reason"])


@asynccontextmanager
async def client_with(url: str, token: str) -> AsyncIterator[Client]:
    http_client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)
    )
    async with (
        http_client,
        Client(streamable_http_client(url, http_client=http_client), mode="legacy") as client,
    ):
        yield client


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


# ------------------------------------------------------------------ the CLI


def test_create_prints_only_the_token_and_stores_only_its_hash(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = run("tokens", "create", "ci", "--max-calls", "5", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    token = done.stdout
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}\n", token), token
    assert "ci" in done.stderr
    raw = (state / "tokens.json").read_text()
    assert token.strip() not in raw
    assert stat.S_IMODE(os.stat(state / "tokens.json").st_mode) == 0o600
    again = run("tokens", "create", "ci", "--state-dir", str(state))
    assert again.returncode == 1 and "--replace" in again.stderr and again.stdout == ""
    replaced = run("tokens", "create", "ci", "--replace", "--state-dir", str(state))
    assert replaced.returncode == 0 and replaced.stdout.strip() != token.strip()


def test_list_shows_profiles_without_hashes_and_revoke_removes(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    runner = CliRunner()
    for args in (
        ["ci", "--allow", "general-theme-tools", "--max-calls-per-tool", "2", "--expires", "12h"],
        ["ops"],
    ):
        result = runner.invoke(main, ["tokens", "create", *args, "--state-dir", state])
        assert result.exit_code == 0, result.output
    listed = runner.invoke(main, ["tokens", "list", "--json", "--state-dir", state])
    rows = json.loads(listed.stdout)
    assert [r["name"] for r in rows] == ["ci", "ops"]
    assert rows[0]["allow"] == ["general-theme-tools"]
    assert rows[0]["max_calls_per_tool"] == 2
    assert rows[0]["expires"] - rows[0]["created"] == pytest.approx(12 * 3600, abs=1)
    assert rows[1]["allow"] is None and rows[1]["expires"] is None
    assert all("sha256" not in r for r in rows)
    plain = runner.invoke(main, ["tokens", "list", "--state-dir", state])
    assert "general-theme-tools" in plain.stdout and "never" in plain.stdout
    revoked = runner.invoke(main, ["tokens", "revoke", "ci", "--state-dir", state])
    assert revoked.exit_code == 0
    listed = runner.invoke(main, ["tokens", "list", "--json", "--state-dir", state])
    assert [r["name"] for r in json.loads(listed.stdout)] == ["ops"]
    missing = runner.invoke(main, ["tokens", "revoke", "opz", "--state-dir", state])
    assert missing.exit_code == 1 and "did you mean 'ops'" in missing.stderr


def test_create_rejects_an_unknown_allow_name_with_a_suggestion(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["tokens", "create", "ci", "--allow", "general-theme-tool", "--state-dir", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "did you mean 'general-theme-tools'" in result.stderr
    assert not (tmp_path / "tokens.json").exists()


def test_token_commands_do_not_import_mcp(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    code = (
        "import sys\nfrom agent_presets.cli import main\n"
        f"for args in (['create', 'ci', '--allow', 'general-theme-tools'], ['list'],"
        " ['revoke', 'ci']):\n"
        f"    try:\n        main(['tokens', *args, '--state-dir', {state!r}])\n"
        "    except SystemExit as exc:\n        assert exc.code in (0, None), exc.code\n"
        "print('mcp' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout


def test_create_rejects_a_bad_expiry(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["tokens", "create", "ci", "--expires", "3 weeks", "--state-dir", str(tmp_path)]
    )
    assert result.exit_code == 2 and "90m, 12h or 30d" in result.stderr


# ------------------------------------------------------------------ a served server


@pytest.fixture
def auth_server(tmp_path: Path) -> Iterator[tuple[HttpServer, Path, dict[str, str]]]:
    state = tmp_path / "state"
    tokens = {
        "narrow": create(
            state, "narrow", "--allow", "general-theme-tools", "--allow", "space_unit_list",
            "--max-calls-per-tool", "2",
        ),
        "wide": create(state, "wide", "--max-calls", "1"),
        "brief": create(state, "brief", "--expires", "90m"),
    }  # fmt: skip
    server = HttpServer(state, "--auth", "tokens")
    try:
        yield server, state, tokens
    finally:
        server.stop()


async def test_auth_refuses_missing_unknown_expired_and_revoked_tokens(
    auth_server: tuple[HttpServer, Path, dict[str, str]],
) -> None:
    server, state, tokens = auth_server
    assert refused_as(server.url, None) == "missing"
    assert refused_as(server.url, tokens["wide"] + "x") == "unknown"
    assert post(server.url, INITIALIZE, tokens["brief"]).status == 200

    # Expire one token by rewriting its record, as time would.
    path = state / "tokens.json"
    data = json.loads(path.read_text())
    for entry in data["tokens"]:
        if entry["name"] == "brief":
            entry["expires"] = time.time() - 1
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
    deadline = time.monotonic() + 1.0
    while post(server.url, INITIALIZE, tokens["brief"]).status != 401:
        assert time.monotonic() < deadline, "the expiry was not honoured within a second"
        time.sleep(0.05)
    assert refused_as(server.url, tokens["brief"]) == "expired"

    # Revoke another while the server runs: honoured within a second.
    assert post(server.url, INITIALIZE, tokens["narrow"]).status == 200
    done = run("tokens", "revoke", "narrow", "--state-dir", str(state))
    assert done.returncode == 0, done.stderr
    revoked_at = time.monotonic()
    while post(server.url, INITIALIZE, tokens["narrow"]).status != 401:
        assert time.monotonic() - revoked_at < 1.0, "the revocation was not honoured in time"
        time.sleep(0.05)
    assert refused_as(server.url, tokens["narrow"]) == "unknown"
    assert post(server.url, INITIALIZE, tokens["wide"]).status == 200


async def test_a_tokens_profile_narrows_tools_counts_budgets_and_names_events(
    auth_server: tuple[HttpServer, Path, dict[str, str]],
    expected_tool_names: dict[str, list[str]],
) -> None:
    server, state, tokens = auth_server
    async with client_with(server.url, tokens["narrow"]) as narrow:
        listed = sorted(t.name for t in (await narrow.list_tools()).tools)
        assert listed == ["space_app_set_theme", "space_unit_list"]
        status = await narrow.read_resource("presets://active/status")
        shown = json.loads(status.contents[0].text)  # type: ignore[union-attr]
        assert sorted(shown["tools"]) == listed
        # Only the presets behind those two tools: their names and their guidance.
        assert sorted(p["name"] for p in shown["active_presets"]) == [
            "general-theme-tools",
            "units-inspect-tools",
        ]
        prompt = (await narrow.get_prompt("active-presets")).messages[0].content
        headings = [h for h in prompt.text.splitlines() if h.startswith("## ")]  # type: ignore[union-attr]
        assert set(headings) <= {"## general-theme-tools", "## units-inspect-tools"}
        outside = await narrow.call_tool(
            "space_scene_add_cuboid", {"position": [0, 0, 0], "size": [1, 1, 1]}
        )
        assert outside.is_error and "not allowed for the token 'narrow'" in text(outside)
        for theme in ("dark", "light"):
            result = await narrow.call_tool("space_app_set_theme", {"theme": theme})
            assert not result.is_error, text(result)
        spent = await narrow.call_tool("space_app_set_theme", {"theme": "dark"})
        assert spent.is_error and "budget of 2 calls" in text(spent)
        # Another tool of the same token still has its own budget.
        assert not (await narrow.call_tool("space_unit_list", {})).is_error

    async with client_with(server.url, tokens["wide"]) as wide:
        listed = [t.name for t in (await wide.list_tools()).tools]
        assert listed == expected_tool_names["scene"]
        assert not (await wide.call_tool("space_app_set_theme", {"theme": "dark"})).is_error
        spent = await wide.call_tool("space_unit_list", {})
        assert spent.is_error and "token 'wide'" in text(spent)

    server.stop()  # the summaries of counted refusals are written on close
    events = list(read_events(state / "events.jsonl"))
    assert events and all(e["token"] in ("narrow", "wide") for e in events)
    by = {(e["kind"], e["tool"], e.get("gate"), e["token"]) for e in events}
    assert ("refusal", "space_scene_add_cuboid", "allow-list", "narrow") in by
    assert ("call", "space_app_set_theme", None, "narrow") in by
    assert ("refusal", "space_app_set_theme", "budget", "narrow") in by
    assert ("call", "space_app_set_theme", None, "wide") in by
    assert ("refusal", "*", "budget", "wide") in by or (
        "refusal",
        "space_unit_list",
        "budget",
        "wide",
    ) in by


# ------------------------------------------------------------------ exposure


def _non_loopback_address() -> str | None:
    """A local non-loopback IPv4 address of this machine, if it has one (no packet is sent)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: connect() on UDP only picks a route
        address = str(probe.getsockname()[0])
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


def test_non_loopback_without_auth_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = subprocess.run(
        serve_command(
            "--transport", "http", "--host", "0.0.0.0", "--port", "0",
            "--state-dir", str(tmp_path / "state"),
        ),
        capture_output=True, text=True, env=server_env(), timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1
    assert "not a loopback address" in done.stderr and "--insecure" in done.stderr
    assert not (tmp_path / "state").exists()


def test_check_exposure_allows_loopback_auth_or_insecure() -> None:
    from agent_presets.lib.model import PresetError
    from agent_presets.server.mcp.auth import check_exposure

    for host in ("127.0.0.1", "localhost", "::1", "127.8.9.10"):
        check_exposure(host, auth=None, insecure=False)
    check_exposure("0.0.0.0", auth="tokens", insecure=False)
    check_exposure("192.0.2.7", auth=None, insecure=True)
    with pytest.raises(PresetError, match="--auth tokens"):
        check_exposure("192.0.2.7", auth=None, insecure=False)


@pytest.mark.parametrize("flag", ["--insecure", "--auth"])
def test_non_loopback_serves_with_insecure_or_tokens(tmp_path: Path, flag: str) -> None:
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address (the check is tested directly)")
    state = tmp_path / "state"
    extra = ["--insecure"]
    token = None
    if flag == "--auth":
        extra = ["--auth", "tokens"]
        token = create(state, "remote")
    process = subprocess.Popen(
        serve_command(
            "--transport", "http", "--host", address, "--port", "0",
            "--state-dir", str(state), *extra,
        ),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=server_env(),
    )  # fmt: skip
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        url = None
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            match = re.search(rf"http://{re.escape(address)}:\d+/mcp", line)
            url = match.group(0) if match else None
        assert url is not None, "the server did not start"
        if token is not None:
            # A remote client names the server as it knows it; the token is the check.
            parts = urlsplit(url)
            conn = http.client.HTTPConnection(address, parts.port, timeout=30)
            headers = {
                "Host": f"tools.example:{parts.port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {token}",
            }
            conn.request("POST", parts.path, json.dumps(INITIALIZE), headers)
            assert conn.getresponse().status == 200
            conn.close()
            assert refused_as(url, None) == "missing"
    finally:
        process.terminate()
        process.wait(timeout=30)


# ------------------------------------------------------------------ opencode


def test_opencode_remote_config_sends_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("abc_DEF-123\n")
    out = tmp_path / "oc"
    result = CliRunner().invoke(
        main,
        [
            "opencode", "--transport", "http", "--url", "https://tools.example:8765/mcp",
            "--token-file", str(token_file), "--write", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    path = out / "opencode.json"
    assert result.stdout.strip() == f"OPENCODE_CONFIG={path.resolve()}"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    config = json.loads(path.read_text())
    assert config["mcp"]["presets"] == {
        "type": "remote",
        "url": "https://tools.example:8765/mcp",
        "enabled": True,
        "headers": {"Authorization": "Bearer abc_DEF-123"},
    }
    no_url = CliRunner().invoke(main, ["opencode", "--transport", "http"])
    assert no_url.exit_code == 2 and "--url" in no_url.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
