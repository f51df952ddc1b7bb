"""Multi-round calls (2026-07-28, ``InputRequiredResult``) against `presets serve --transport http`.

The server asks a 2026-07-28 client by ending a round with ``input_required``;
the client answers and calls again with the sealed ``requestState``. These
tests answer with the SDK's own client (its elicitation callback) and, for
what a client must not be able to do, with raw HTTP: a forged or altered
state, one replayed for another tool, other arguments or another caller, is
refused with ``-32602``; a state survives a restart of the server that sealed it.
"""

from __future__ import annotations

import http.client
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
import pytest
from mcp import Client

from .conftest import HttpServer, serve_command, server_env

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[1] / "conformance" / "fixture_plugins"
ASK = "test_elicitation"
VERSION = "2026-07-28"
CAPABILITIES = {"elicitation": {}}


def fixture_server(state: Path, *extra: str) -> HttpServer:
    return HttpServer(state, "--namespace", "test_", "--plugins-dir", str(FIXTURES), *extra)


def call(
    url: str,
    name: str,
    arguments: dict[str, Any],
    *,
    token: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """One raw 2026-07-28 ``tools/call``: its JSON-RPC answer (the last SSE event, or the JSON)."""
    params = {"name": name, "arguments": arguments, **more}
    return raw_request(url, "tools/call", name, params, CAPABILITIES, token=token)


def raw_request(
    url: str,
    method: str,
    name: str | None,
    params: dict[str, Any],
    capabilities: dict[str, Any],
    *,
    token: str | None = None,
    request_id: int = 7,
) -> dict[str, Any]:
    """One raw 2026-07-28 request of ``method`` on ``name``, with the per-request ``_meta``
    and headers the revision asks for: its JSON-RPC answer (the last SSE event, or the JSON).

    ``name`` is the ``Mcp-Name`` header (None: a method that names nothing). Each
    request is a connection of its own, closed once answered: the client goes away.
    """
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            },
        },
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.request("POST", parts.path, json.dumps(body), headers)
        response = conn.getresponse()
        raw = response.read().decode()
    finally:
        conn.close()
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        datas = [line[5:].strip() for line in raw.splitlines() if line.startswith("data:")]
        answers = [json.loads(d) for d in datas if d and "id" in json.loads(d)]
        return answers[-1]  # type: ignore[no-any-return]
    return json.loads(raw)  # type: ignore[no-any-return]


ACCEPT = {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}}


def first_round(url: str, token: str | None = None, message: str = "Who are you?") -> str:
    answer = call(url, ASK, {"message": message}, token=token)
    result = answer["result"]
    assert result["resultType"] == "input_required", answer
    assert list(result["inputRequests"]) == ["elicitation-1"]
    assert result["inputRequests"]["elicitation-1"]["method"] == "elicitation/create"
    state = result["requestState"]
    assert isinstance(state, str) and "ada" not in state
    return state


def second_round(
    url: str,
    state: str,
    *,
    name: str = ASK,
    message: str = "Who are you?",
    token: str | None = None,
) -> dict[str, Any]:
    return call(
        url,
        name,
        {"message": message},
        token=token,
        inputResponses={"elicitation-1": ACCEPT},
        requestState=state,
    )


def refused(answer: dict[str, Any]) -> bool:
    error = answer.get("error")
    return error is not None and error["code"] == types.INVALID_PARAMS


async def test_a_2026_client_answers_through_its_elicitation_callback(tmp_path: Path) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content=ACCEPT["content"])

    server = fixture_server(tmp_path / "state")
    try:
        async with Client(server.url, elicitation_callback=answer) as client:
            assert client.protocol_version == VERSION
            result = await client.call_tool(ASK, {"message": "Who are you?"})
    finally:
        server.stop()
    assert not result.is_error
    assert "action=accept" in result.content[0].text  # type: ignore[union-attr]
    assert asked == ["Who are you?"]


def test_an_untouched_state_completes_and_a_tampered_one_is_refused(tmp_path: Path) -> None:
    server = fixture_server(tmp_path / "state")
    try:
        state = first_round(server.url)
        # One character changed, anywhere: the seal breaks.
        middle = len(state) // 2
        flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
        assert refused(second_round(server.url, flipped))
        # A state this server never sealed: the old unsealed base64 JSON of answers.
        assert refused(second_round(server.url, "eyJlbGljaXRhdGlvbi0xIjoge319"))
        # The same state for other arguments, or for another tool.
        assert refused(second_round(server.url, state, message="Something else?"))
        assert refused(second_round(server.url, state, name="test_elicitation_sep1034_defaults"))
        done = second_round(server.url, state)
    finally:
        server.stop()
    result = done["result"]
    assert result["resultType"] == "complete" and not result["isError"], done
    assert '"username": "ada"' in result["content"][0]["text"]


def test_answers_it_does_not_know_are_ignored_and_a_bad_answer_is_asked_again(
    tmp_path: Path,
) -> None:
    server = fixture_server(tmp_path / "state")
    extra = {"unknown": {"action": "accept", "content": {"x": 1}}}
    try:
        done = call(
            server.url, ASK, {"message": "Who?"}, inputResponses={"elicitation-1": ACCEPT, **extra}
        )
        again = call(
            server.url, ASK, {"message": "Who?"}, inputResponses={"elicitation-1": {"no": 1}}
        )
    finally:
        server.stop()
    assert done["result"]["resultType"] == "complete", done
    # What is no answer at all is invalid params, or the question again: never a run.
    assert refused(again) or again["result"]["resultType"] == "input_required", again


def test_a_state_is_bound_to_the_caller_that_got_it(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    tokens = {}
    for name in ("alice", "bob"):
        done = subprocess.run(
            [*serve_command()[:-1], "tokens", "create", name, "--state-dir", str(state_dir)],
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        tokens[name] = done.stdout.strip()
    server = fixture_server(state_dir, "--auth", "tokens")
    try:
        state = first_round(server.url, token=tokens["alice"])
        assert refused(second_round(server.url, state, token=tokens["bob"]))
        done = second_round(server.url, state, token=tokens["alice"])
    finally:
        server.stop()
    assert done["result"]["resultType"] == "complete", done


def test_a_restarted_server_continues_a_round_trip_it_began(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    server = fixture_server(state_dir)
    try:
        state = first_round(server.url)
    finally:
        server.stop()
    key = state_dir / "request-state.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    again = fixture_server(state_dir)
    try:
        done = second_round(again.url, state)
    finally:
        again.stop()
    assert done["result"]["resultType"] == "complete", done
    # Another state directory has another key: the state means nothing there.
    other = fixture_server(tmp_path / "other")
    try:
        assert refused(second_round(other.url, state))
    finally:
        other.stop()


def test_a_confirmation_approved_in_a_round_runs_its_call_once(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    server = HttpServer(
        state_dir, "--on", "general-file-write-tools", "--confirm", "risky",
        "--confirm-via", "client",
    )  # fmt: skip
    write = "space_app_write_file"
    arguments = {"path": "once.txt", "content": "x"}
    try:
        first = call(server.url, write, arguments)["result"]
        assert first["resultType"] == "input_required", first
        (key,) = first["inputRequests"]
        assert key.startswith("presets-confirm-")
        answered = {
            "inputResponses": {key: {"action": "accept"}},
            "requestState": first["requestState"],
        }
        done = call(server.url, write, arguments, **answered)["result"]
        assert done["resultType"] == "complete" and not done["isError"], done
        (state_dir / "files" / "once.txt").unlink()
        # The same answer again: the approval is spent, so the person is asked again.
        replay = call(server.url, write, arguments, **answered)["result"]
    finally:
        server.stop()
    assert replay["resultType"] == "input_required", replay
    assert not (state_dir / "files" / "once.txt").exists()
