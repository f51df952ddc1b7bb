"""The content provider behind the conformance suite's resource template (members.yaml).

``test://template/{id}/data`` reads as JSON naming the id, made when read, so an
id holding a quote still gives valid JSON: what a YAML text with ``{{id}}``
could not promise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agent_presets import ContentProvider, hookimpl


def template_data(_app: Any, variables: Mapping[str, str]) -> str:
    identifier = variables["id"]
    return json.dumps(
        {"id": identifier, "templateTest": True, "data": f"Data for ID: {identifier}"}
    )


@hookimpl
def presets_content_providers() -> list[ContentProvider]:
    return [ContentProvider("conformance.template_data", read=template_data)]
