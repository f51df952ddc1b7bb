"""The MCP conformance suite's fixture tools, as an ordinary plugins-folder plugin.

The suite (``@modelcontextprotocol/conformance``, server scenarios) calls
tools named ``test_*`` and checks what they return and what they send while
they run. Served with ``presets serve --namespace test_ --plugins-dir`` this
folder, each adapter's name below becomes the suite's name (``simple_text``
is served as ``test_simple_text``); the preset in ``conformance.yaml`` keeps
them on in every context.

Nothing here is canned for the suite's sake beyond what its scenarios
specify: the image is a real PNG and the sound a real WAV, both made here;
progress, logs, elicitation and sampling go through the same call context
any plugin's handler gets.
"""

from __future__ import annotations

import io
import json
import math
import struct
import threading
import time
import wave
import zlib
from typing import Any

from agent_presets import (
    CallContext,
    ToolAdapter,
    ToolCall,
    ToolCallError,
    hookimpl,
    object_schema,
    results,
)

STEP = 0.05
"""Seconds between the notifications a tool sends while it runs (the suite asks for delays)."""


def png(width: int = 8, height: int = 8, rgb: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    """A solid ``width`` x ``height`` PNG in one colour, encoded by hand (zlib and CRCs)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width  # filter byte 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def wav(seconds: float = 0.1, hz: float = 440.0, rate: int = 8000) -> bytes:
    """A mono 16-bit WAV of a sine tone."""
    frames = b"".join(
        struct.pack("<h", int(12000 * math.sin(2 * math.pi * hz * i / rate)))
        for i in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(rate)
        sound.writeframes(frames)
    return out.getvalue()


def _context(call: ToolCall, feature: str) -> CallContext:
    if call.context is None:
        raise ToolCallError(f"{call.name} needs an MCP client for {feature}; call it over MCP")
    return call.context


def simple_text(_app: Any, _args: dict[str, Any]) -> str:
    return "This is a simple text response for testing."


def image_content(_app: Any, _args: dict[str, Any]) -> results.Content:
    return results.image(png(), "image/png")


def audio_content(_app: Any, _args: dict[str, Any]) -> results.Content:
    return results.audio(wav(), "audio/wav")


def embedded_resource(_app: Any, _args: dict[str, Any]) -> results.Content:
    return results.resource(
        "test://embedded-resource", "This is an embedded resource content.", mime="text/plain"
    )


def multiple_content_types(_app: Any, _args: dict[str, Any]) -> results.ToolResult:
    return results.ToolResult(
        [
            results.text("Multiple content types test:"),
            results.image(png(), "image/png"),
            results.resource(
                "test://mixed-content-resource",
                json.dumps({"test": "data", "value": 123}),
                mime="application/json",
            ),
        ]
    )


def with_logging(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = call.context
    for i, message in enumerate(("Tool execution started", "Tool processing data", "done")):
        if i:
            time.sleep(STEP)
        if ctx is not None:
            ctx.log("info", message if message != "done" else "Tool execution completed")
    return "Tool with logging executed successfully"


def with_progress(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = call.context
    for i, done in enumerate((0, 50, 100)):
        if i:
            time.sleep(STEP)
        if ctx is not None:
            ctx.progress(done, 100, f"{done} of 100")
    return "Progress test completed"


def error_handling(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    raise ToolCallError(f"{call.name}: this tool always fails, to test error handling")


def sampling(_app: Any, args: dict[str, Any], call: ToolCall) -> str:
    answer = _context(call, "sampling").sample(args["prompt"], 100)
    return f"LLM response: {answer}"


def _elicited(ctx: CallContext, message: str, schema: dict[str, Any], lead: str) -> str:
    answer = ctx.elicit(message, schema)
    content = json.dumps(dict(answer.content or {}), sort_keys=True)
    return f"{lead}action={answer.action}, content={content}"


def elicitation(_app: Any, args: dict[str, Any], call: ToolCall) -> str:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    ctx = _context(call, "elicitation")
    return _elicited(ctx, args["message"], schema, "User response: ")


DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


def elicitation_defaults(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "elicitation")
    return _elicited(
        ctx, "Please review and update the form fields", DEFAULTS_SCHEMA, "Elicitation completed: "
    )


def elicitation_enums(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "elicitation")
    return _elicited(ctx, "Please choose from the options", ENUMS_SCHEMA, "Elicitation completed: ")


# -- the 2026-07-28 scenarios ------------------------------------------------------
# Multi-round calls (input-required-result-*): each question has the key the suite
# answers; the call context turns it into an input request and the answer back.

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def _content(answer: Any) -> dict[str, Any]:
    return dict(answer.content or {})


def irr_elicitation(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    answer = _context(call, "elicitation").elicit(
        "What is your name?", NAME_SCHEMA, key="user_name"
    )
    return f"Hello, {_content(answer).get('name', 'stranger')}!"


def irr_sampling(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "sampling")
    return ctx.sample("What is the capital of France?", 100, key="capital_question")


def irr_list_roots(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    roots = _context(call, "roots").list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(root.get("uri")) for root in roots)


def irr_request_state(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = _context(call, "elicitation").elicit("Please confirm", schema, key="confirm")
    # The answer reached this run only through the sealed state the server checked.
    return f"state-ok: confirmed={_content(answer).get('ok')}"


def irr_multiple_inputs(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "elicitation, sampling and roots")
    with ctx.together():  # one round with all three questions
        name = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        greeting = ctx.sample("Generate a greeting", 50, key="greeting")
        roots = ctx.list_roots(key="client_roots")
    return f"{greeting} {_content(name).get('name')} ({len(roots)} roots)"


def irr_multi_round(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "elicitation")
    name = ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    color_schema = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    color = ctx.elicit("Step 2: What is your favorite color?", color_schema, key="step2")
    return f"{_content(name).get('name')} likes {_content(color).get('color')}"


def irr_capabilities(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "elicitation or sampling")
    if "elicitation" in ctx.client_capabilities:
        answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
        return f"Hello, {_content(answer).get('name')}!"
    return ctx.sample("Say hello", 20, key="hello")


def missing_capability(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    # Needs sampling: a client that did not declare it gets -32021, never a result.
    return _context(call, "sampling").sample("Say hello", 20)


def logging_tool(_app: Any, _args: dict[str, Any], call: ToolCall) -> str:
    ctx = _context(call, "logging")
    for message in ("Tool execution started", "Tool execution completed"):
        ctx.log("info", message)
    return "logged (only if the request asked for a log level)"


def trigger_change(app: Any, _args: dict[str, Any]) -> str:
    """Change the served tools and prompts and change them back: every listener hears it.

    The suite's diagnostic hook stands for a change on the server's side, so it is made
    from outside the calling agent's own call (on a thread of its own, as a host's UI
    thread would make it): a stable caller's own switch never changes its list
    (agent_presets.server.delivery), a change from outside does.
    """

    def change() -> None:
        shell = app.shell
        before = shell.surface
        shell.set_surface("canvas" if before != "canvas" else "scene")
        shell.set_surface(before)

    outside = threading.Thread(target=change, name="conformance-host-change")
    outside.start()
    outside.join()
    return "the tool and prompt lists changed (and changed back)"


def custom_headers(_app: Any, args: dict[str, Any]) -> str:
    return f"region={args['region']}"


CUSTOM_HEADERS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "Where to run; sent in the Mcp-Param-Region header too",
            "x-mcp-header": "Region",
        }
    },
    "required": ["region"],
}

# json-schema-2020-12 wants a tool named json_schema_2020_12_tool, which --namespace
# test_ cannot give: the test serves this folder a second time under --namespace json_,
# and this adapter (test_schema_2020_12_tool the first time) is the one it finds.
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def schema_2020_12(_app: Any, args: dict[str, Any]) -> str:
    return f"contact {args.get('name', 'someone')}"


NO_ARGUMENTS = object_schema({})
READ_ONLY = {"readOnlyHint": True}

# (name, description, handler, input schema, annotations)
TOOLS: list[tuple[str, str, Any, dict[str, Any], dict[str, Any] | None]] = [
    ("simple_text", "Return one text block.", simple_text, NO_ARGUMENTS, READ_ONLY),
    ("image_content", "Return a PNG image.", image_content, NO_ARGUMENTS, READ_ONLY),
    ("audio_content", "Return a WAV sound.", audio_content, NO_ARGUMENTS, READ_ONLY),
    (
        "embedded_resource",
        "Return an embedded text resource.",
        embedded_resource,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    (
        "multiple_content_types",
        "Return text, an image and a resource.",
        multiple_content_types,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    (
        "tool_with_logging",
        "Log three messages while running.",
        with_logging,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    (
        "tool_with_progress",
        "Report progress 0, 50 and 100 of 100 while running.",
        with_progress,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    ("error_handling", "Always fail with a tool error.", error_handling, NO_ARGUMENTS, READ_ONLY),
    (
        "sampling",
        "Ask the client's model to answer a prompt.",
        sampling,
        object_schema(
            {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            ["prompt"],
        ),
        READ_ONLY,
    ),
    (
        "elicitation",
        "Ask the user for a username and an email address.",
        elicitation,
        object_schema(
            {"message": {"type": "string", "description": "The message to show the user"}},
            ["message"],
        ),
        READ_ONLY,
    ),
    (
        "elicitation_sep1034_defaults",
        "Ask the user a form whose fields have defaults.",
        elicitation_defaults,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    (
        "elicitation_sep1330_enums",
        "Ask the user a form of every enum kind.",
        elicitation_enums,
        NO_ARGUMENTS,
        READ_ONLY,
    ),
    *[
        (name, description, handler, NO_ARGUMENTS, READ_ONLY)
        for name, description, handler in [
            ("input_required_result_elicitation", "Ask the user's name.", irr_elicitation),
            ("input_required_result_sampling", "Ask the client's model.", irr_sampling),
            ("input_required_result_list_roots", "Ask the client's roots.", irr_list_roots),
            ("input_required_result_request_state", "Ask for a yes.", irr_request_state),
            ("input_required_result_multiple_inputs", "Ask three things.", irr_multiple_inputs),
            ("input_required_result_multi_round", "Ask twice.", irr_multi_round),
            ("input_required_result_tampered_state", "Ask the user's name.", irr_elicitation),
            ("input_required_result_capabilities", "Ask what can be.", irr_capabilities),
            ("missing_capability", "Needs sampling.", missing_capability),
            ("streaming_elicitation", "Ask the user's name.", irr_elicitation),
            ("logging_tool", "Log two messages.", logging_tool),
        ]
    ],
    (
        "trigger_tool_change",
        "Change the tool list (and back).",
        trigger_change,
        NO_ARGUMENTS,
        None,
    ),
    (
        "trigger_prompt_change",
        "Change the prompt list (and back).",
        trigger_change,
        NO_ARGUMENTS,
        None,
    ),
    (
        "schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        schema_2020_12,
        SCHEMA_2020_12,
        READ_ONLY,
    ),
    (
        "custom_headers",
        "Echo a header-mirrored argument.",
        custom_headers,
        CUSTOM_HEADERS_SCHEMA,
        READ_ONLY,
    ),
]


@hookimpl
def presets_tool_adapters() -> list[ToolAdapter]:
    return [
        ToolAdapter(
            f"conformance.{name}",
            "",
            description,
            schema,
            handler,
            annotations=annotations,
            name=name,
        )
        for name, description, handler, schema, annotations in TOOLS
    ]
