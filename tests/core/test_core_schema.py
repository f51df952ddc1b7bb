"""The published preset schema: one source of truth, a valid Draft 2020-12 schema."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from agent_presets.lib.loader import schema

REPO_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "preset.schema.json"


def packaged_schema_text() -> str:
    return (files("agent_presets") / "schemas" / "preset.schema.json").read_text(encoding="utf-8")


def test_the_packaged_schema_equals_the_repository_schema():
    assert REPO_SCHEMA.is_file()
    repo_text = REPO_SCHEMA.read_text(encoding="utf-8")
    assert packaged_schema_text() == repo_text
    assert json.loads(packaged_schema_text()) == json.loads(repo_text)
    assert schema() == json.loads(repo_text)


def test_the_schema_is_a_valid_draft_2020_12_schema():
    document = json.loads(REPO_SCHEMA.read_text(encoding="utf-8"))
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert jsonschema.validators.validator_for(document) is jsonschema.Draft202012Validator
    jsonschema.Draft202012Validator.check_schema(document)


VALID_FILE = {
    "presets": [
        {
            "name": "drawing-shape-tools",
            "group": "drawing",
            "default_state": "auto",
            "risk": "normal",
            "contexts": [{"surface": "canvas", "activity": "drawing"}],
            "tool_ids": ["drawing.set-tool"],
            "system_prompt": "Draw.",
        },
        {
            "name": "general-shell-tools",
            "default_state": "off",
            "risk": "shell",
            "contexts": [{"surface": "any", "canvas_visible": "any", "activity": None}],
            "tool_ids": ["app.run-bash"],
        },
    ]
}


def test_the_schema_accepts_a_valid_file():
    jsonschema.Draft202012Validator(schema()).validate(VALID_FILE)


@pytest.mark.parametrize(
    "preset_change",
    [
        {"risk": "destructive", "default_state": "auto"},
        {"default_state": "on"},
        {"name": "Not Kebab"},
        {"tool_ids": []},
        {"contexts": [{}]},
        {"contexts": [{"canvas_visible": ["yes"]}]},
        {"unknown": 1},
    ],
)
def test_the_schema_rejects_invalid_presets(preset_change):
    preset = {**VALID_FILE["presets"][0], **preset_change}
    validator = jsonschema.Draft202012Validator(schema())
    assert not validator.is_valid({"presets": [preset]})


def test_the_schema_names_no_context_field():
    # Which fields exist is declared (presets_context_fields), by the host that provides them.
    pattern = schema()["$defs"]["pattern"]
    assert "properties" not in pattern
    text = REPO_SCHEMA.read_text(encoding="utf-8")
    for name in ("surface", "activity", "canvas_visible", "world_id"):
        assert name not in text


def test_every_field_of_the_schema_has_a_description_for_editors() -> None:
    schema = json.loads((Path(__file__).parents[2] / "schemas" / "preset.schema.json").read_text())
    missing: list[str] = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            typed = any(k in node for k in ("type", "enum", "const", "$ref", "properties"))
            if typed and "description" not in node:
                missing.append(path or "/")
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(schema, "")
    assert missing == []
