"""A prompt whose provider asks the person, against `presets serve --transport http`.

A ``ContentProvider`` whose ``render`` takes a third parameter gets a call
context. On a 2026-07-28 connection its ``elicit`` ends the ``prompts/get``
round with an ``InputRequiredResult``, and the client's retry, with the answer
and the sealed ``requestState``, gets the prompt: the SDK's client does this
through its elicitation callback. The state is bound to the prompt, its
arguments and the caller; an altered or misapplied one is refused with
``-32602``. A client that declared no elicitation is refused with ``-32021``.
A legacy connection gives the provider no context, and the prompt renders
without asking, as it did before providers could ask.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from .conftest import HttpServer, serve_command, server_env
from .test_e2e_rounds import raw_request

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
PROMPT = "space_ask_topic"

PLUGIN = """
from agent_presets import ContentProvider, hookimpl, results

SCHEMA = {"type": "object", "properties": {"angle": {"type": "string"}}, "required": ["angle"]}


def render(app, arguments, context):
    angle = "any"
    if context is not None:
        answer = context.elicit(f"Which angle on {arguments['topic']}?", SCHEMA, key="angle")
        angle = answer.content["angle"] if answer.accepted else "declined"
    return [results.text(f"Write about {arguments['topic']} from the {angle} angle.")]


@hookimpl
def presets_content_providers():
    return [ContentProvider("ask.topic", render=render)]
"""

PRESETS = """
presets:
  - name: ask-prompts
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    prompts: [ask.topic, ask.plain]
prompts:
  - id: ask.topic
    description: A writing prompt that asks the person for an angle first.
    arguments:
      - {name: topic, required: true}
  - id: ask.plain
    description: A prompt that asks nothing.
    arguments:
      - {name: topic, required: true}
    messages:
      - {role: user, text: "Write about {{topic}}."}
"""


def plugin_server(tmp_path: Path, *extra: str) -> HttpServer:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "ask.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "ask.yaml").write_text(PRESETS, encoding="utf-8")
    return HttpServer(tmp_path / "state", "--plugins-dir", str(folder), *extra)


def get_prompt(
    url: str,
    name: str,
    arguments: dict[str, str],
    *,
    capabilities: dict[str, Any] | None = None,
    token: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    """One raw 2026-07-28 ``prompts/get``: its JSON-RPC answer."""
    params = {"name": name, "arguments": arguments, **more}
    asks = {"elicitation": {}} if capabilities is None else capabilities
    return raw_request(url, "prompts/get", name, params, asks, token=token)


ANSWER = {"angle": {"action": "accept", "content": {"angle": "historical"}}}


def first_round(url: str, topic: str = "tea", token: str | None = None) -> str:
    answer = get_prompt(url, PROMPT, {"topic": topic}, token=token)
    result = answer["result"]
    assert result["resultType"] == "input_required", answer
    asked = result["inputRequests"]["angle"]
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["message"] == f"Which angle on {topic}?"
    return str(result["requestState"])


def refused(answer: dict[str, Any]) -> bool:
    error = answer.get("error")
    return error is not None and error["code"] == types.INVALID_PARAMS


def text_of(answer: dict[str, Any]) -> str:
    result = answer["result"]
    assert result["resultType"] == "complete", answer
    return str(result["messages"][0]["content"]["text"])


async def test_a_2026_client_answers_a_prompts_question_through_its_elicitation_callback(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"angle": "chemical"})

    server = plugin_server(tmp_path)
    try:
        async with Client(server.url, elicitation_callback=answer) as client:
            assert client.protocol_version == VERSION
            result = await client.get_prompt(PROMPT, {"topic": "tea"})
            plain = await client.get_prompt("space_ask_plain", {"topic": "tea"})
    finally:
        server.stop()
    assert asked == ["Which angle on tea?"]
    assert result.messages[0].content.text == "Write about tea from the chemical angle."  # type: ignore[union-attr]
    assert plain.messages[0].content.text == "Write about tea."  # type: ignore[union-attr]


def test_a_prompts_state_is_sealed_and_bound_to_the_prompt_and_its_arguments(
    tmp_path: Path,
) -> None:
    server = plugin_server(tmp_path)
    try:
        state = first_round(server.url)
        assert "historical" not in state and "angle" not in state
        middle = len(state) // 2
        flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
        tampered = get_prompt(
            server.url, PROMPT, {"topic": "tea"}, inputResponses=ANSWER, requestState=flipped
        )
        other_arguments = get_prompt(
            server.url, PROMPT, {"topic": "coffee"}, inputResponses=ANSWER, requestState=state
        )
        other_prompt = get_prompt(
            server.url, "space_ask_plain", {"topic": "tea"}, inputResponses=ANSWER,
            requestState=state,
        )  # fmt: skip
        done = get_prompt(
            server.url, PROMPT, {"topic": "tea"}, inputResponses=ANSWER, requestState=state
        )
    finally:
        server.stop()
    assert refused(tampered), tampered
    assert refused(other_arguments), other_arguments
    assert refused(other_prompt), other_prompt
    assert text_of(done) == "Write about tea from the historical angle."


def test_a_prompts_state_is_bound_to_the_caller_that_got_it(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    tokens = {}
    for name in ("alice", "bob"):
        made = subprocess.run(
            [*serve_command()[:-1], "tokens", "create", name, "--state-dir", str(state_dir)],
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        tokens[name] = made.stdout.strip()
    server = plugin_server(tmp_path, "--auth", "tokens")
    try:
        state = first_round(server.url, token=tokens["alice"])
        stolen = get_prompt(
            server.url, PROMPT, {"topic": "tea"}, token=tokens["bob"], inputResponses=ANSWER,
            requestState=state,
        )  # fmt: skip
        own = get_prompt(
            server.url, PROMPT, {"topic": "tea"}, token=tokens["alice"], inputResponses=ANSWER,
            requestState=state,
        )  # fmt: skip
    finally:
        server.stop()
    assert refused(stolen), stolen
    assert text_of(own) == "Write about tea from the historical angle."


async def test_a_client_without_elicitation_is_refused_and_a_legacy_one_gets_it_unasked(
    tmp_path: Path,
) -> None:
    async def never(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise AssertionError("a legacy connection is never asked for a prompt")

    server = plugin_server(tmp_path)
    try:
        missing = get_prompt(server.url, PROMPT, {"topic": "tea"}, capabilities={})
        async with Client(server.url, mode="legacy", elicitation_callback=never) as client:
            unasked = await client.get_prompt(PROMPT, {"topic": "tea"})
    finally:
        server.stop()
    error = missing["error"]
    assert error["code"] == types.MISSING_REQUIRED_CLIENT_CAPABILITY, missing
    assert error["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
    assert "get this prompt" in error["message"]
    assert unasked.messages[0].content.text == "Write about tea from the any angle."  # type: ignore[union-attr]
