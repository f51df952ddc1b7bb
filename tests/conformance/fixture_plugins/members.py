"""The content providers behind the conformance suite's members (members.yaml).

``test://template/{id}/data`` reads as JSON naming the id, made when read, so an
id holding a quote still gives valid JSON: what a YAML text with ``{{id}}``
could not promise.

``test_input_required_result_prompt`` asks the person what context to use
before it renders: its ``render`` takes the call context, and on a 2026-07-28
connection its ``elicit`` ends the round with an ``InputRequiredResult``; the
client's retry, with the answer, gets the prompt. A legacy connection gives
no context, and the prompt says it had none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_presets import CallContext, ContentProvider, hookimpl, results

CONTEXT_SCHEMA = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}


def template_data(_app: Any, variables: Mapping[str, str]) -> str:
    identifier = variables["id"]
    return json.dumps(
        {"id": identifier, "templateTest": True, "data": f"Data for ID: {identifier}"}
    )


def input_required_prompt(
    _app: Any, _arguments: Mapping[str, str], context: CallContext | None
) -> list[results.Content]:
    given = "none (this connection cannot be asked)"
    if context is not None:
        answer = context.elicit(
            "What context should the prompt use?", CONTEXT_SCHEMA, key="user_context"
        )
        if answer.accepted and answer.content:
            given = str(answer.content.get("context", ""))
        else:
            given = f"none (the person chose {answer.action})"
    return [results.text(f"Answer with this context in mind: {given}")]


@hookimpl
def presets_content_providers() -> list[ContentProvider]:
    return [
        ContentProvider("conformance.template_data", read=template_data),
        ContentProvider("conformance.input_required_result_prompt", render=input_required_prompt),
    ]
