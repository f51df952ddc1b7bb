"""The unit tools: ``UNITS.adapter`` (an ``AdapterKit``) over ``app.units``, fetched when called.

Each tool's action is named after it: ``apply_patch`` does ``unit.apply-patch``, and
``list_`` (not to hide the builtin) ``unit.list``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from agent_presets import AdapterKit, ToolAdapter, object_schema, result_schema

if TYPE_CHECKING:
    from agent_presets_units.units import UnitFolder

UNITS: Final = AdapterKit("units", prefix="unit")

UNIT_NAME: Final = {
    "type": "string",
    "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,63}$",
    "description": "The unit's name: a Python identifier such as 'colour_tools' (the file is "
    "<name>.py in the unit folder).",
}
CHECK_SYNTAX: Final = {
    "type": "boolean",
    "default": True,
    "description": "Refuse the change when the new source is not valid Python (default true). "
    "Pass false only to save unfinished work.",
}


def _check(arguments: dict[str, Any]) -> bool:
    return bool(arguments.get("check_syntax", True))


STATUS_NOTE: Final = (
    "Load status is 'never-loaded', 'loaded' or 'error' (with type, message and line); "
    "'stale' means the source changed since that load."
)


# What each tool returns (its structuredContent), as the unit folder builds it.
TEXT: Final = {"type": "string"}
MAYBE_TEXT: Final = {"type": ["string", "null"]}
LINE: Final = {"type": ["integer", "null"]}
SIZE: Final = {"type": "integer", "minimum": 0}
SYNTAX_ERROR: Final = result_schema(
    {"message": TEXT, "line": LINE, "column": LINE, "text": MAYBE_TEXT}, ["column", "text"]
)
LOAD_ERROR: Final = result_schema(
    {**SYNTAX_ERROR["properties"], "type": TEXT, "traceback": MAYBE_TEXT},
    ["column", "text", "traceback"],
    description="Why loading failed: a syntax error has column and text, "
    "any other exception a traceback.",
)
STATUS: Final = result_schema(
    {
        "state": {"enum": ["never-loaded", "loaded", "error"]},
        "at": {**TEXT, "description": "When it was loaded (ISO 8601)."},
        "stale": {"type": "boolean", "description": "The source changed since that load."},
        "error": LOAD_ERROR,
    },
    ["at", "stale", "error"],
    allOf=[
        {
            "if": {"properties": {"state": {"enum": ["loaded", "error"]}}, "required": ["state"]},
            "then": {"required": ["at", "stale"]},
        },
        {
            "if": {"properties": {"state": {"const": "error"}}, "required": ["state"]},
            "then": {"required": ["error"]},
        },
    ],
)
LIST_OUTPUT: Final = result_schema(
    {
        "units": {
            "type": "array",
            "items": result_schema({"name": TEXT, "size": SIZE, "status": STATUS}),
        }
    }
)
SUMMARY: Final = {"name": TEXT, "size": SIZE, "sha256": TEXT, "status": STATUS}
INSPECT_OUTPUT: Final = result_schema(
    {
        **SUMMARY,
        "mtime": TEXT,
        "lines": SIZE,
        "source": {**MAYBE_TEXT, "description": "null when the file is not UTF-8 text."},
        "syntax_error": SYNTAX_ERROR,
        "doc": MAYBE_TEXT,
        "functions": {
            "type": "array",
            "items": result_schema(
                {"name": TEXT, "line": SIZE, "signature": TEXT, "doc": MAYBE_TEXT}
            ),
        },
        "classes": {
            "type": "array",
            "items": result_schema(
                {
                    "name": TEXT,
                    "line": SIZE,
                    "bases": {"type": "array", "items": TEXT},
                    "methods": {"type": "array", "items": TEXT},
                    "doc": MAYBE_TEXT,
                }
            ),
        },
    },
    # The outline (doc, functions, classes) when the source parses, else syntax_error.
    ["syntax_error", "doc", "functions", "classes"],
)
CHANGE_OUTPUT: Final = result_schema({**SUMMARY, "created": {"const": True}}, ["created"])
PATCH_OUTPUT: Final = result_schema(
    {
        **SUMMARY,
        "hunks": {
            "type": "array",
            "items": result_schema({"hunk": SIZE, "line": SIZE, "offset": {"type": "integer"}}),
        },
    }
)
RELOAD_OUTPUT: Final = result_schema(
    {"name": TEXT, "status": STATUS, "defines": {"type": "array", "items": TEXT}}, ["defines"]
)


def list_(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.list()


def inspect(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.inspect(a["name"])


def create(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.create(a["name"], a["source"], check_syntax=_check(a))


def edit(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.edit(a["name"], a["source"], check_syntax=_check(a))


def apply_patch(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.apply_patch(a["name"], a["patch"], check_syntax=_check(a))


def reload(u: UnitFolder, a: dict[str, Any]) -> Any:
    return u.reload(a["name"])


def tool_adapters() -> list[ToolAdapter]:
    return [
        UNITS.adapter(
            list_,
            title="List units",
            output_schema=LIST_OUTPUT,
            description="List the code units (Python files) with size and load status. "
            + STATUS_NOTE,
            input_schema=object_schema({}, []),
            annotations={"readOnlyHint": True},
        ),
        UNITS.adapter(
            inspect,
            title="Inspect a unit",
            output_schema=INSPECT_OUTPUT,
            description=(
                "Show one unit: its full source, size, sha256, mtime, line count, load status, and "
                "its top-level functions (with signatures) and classes, or the syntax error that "
                "stops them being read. " + STATUS_NOTE
            ),
            input_schema=object_schema({"name": UNIT_NAME}, ["name"]),
            annotations={"readOnlyHint": True},
        ),
        UNITS.adapter(
            create,
            title="Create a unit",
            output_schema=CHANGE_OUTPUT,
            description=(
                "Create a new unit with the given Python source. Refused when the unit already "
                "exists or (unless check_syntax is false) the source has a syntax error. Creating "
                "does not run it: reload it to load it."
            ),
            input_schema=object_schema(
                {
                    "name": UNIT_NAME,
                    "source": {
                        "type": "string",
                        "description": "The unit's complete Python source.",
                    },
                    "check_syntax": CHECK_SYNTAX,
                },
                ["name", "source"],
            ),
        ),
        UNITS.adapter(
            edit,
            title="Edit a unit",
            output_schema=CHANGE_OUTPUT,
            description=(
                "Replace an existing unit's whole source (atomically). For small changes prefer "
                "{{unit.apply-patch}}. Editing does not reload the unit."
            ),
            input_schema=object_schema(
                {
                    "name": UNIT_NAME,
                    "source": {"type": "string", "description": "The unit's complete new source."},
                    "check_syntax": CHECK_SYNTAX,
                },
                ["name", "source"],
            ),
            annotations={"destructiveHint": True, "idempotentHint": True},
        ),
        UNITS.adapter(
            apply_patch,
            title="Apply a patch to a unit",
            output_schema=PATCH_OUTPUT,
            description=(
                "Apply a unified diff (one file; '---'/'+++' headers optional; hunks "
                "'@@ -a,b +c,d @@' whose counts match their lines) to a unit. Strict: every "
                "context and removed line must equal the current source exactly; a hunk that does "
                "not match at its line is applied only where it matches uniquely. A patch that "
                "does not apply is refused whole and changes nothing; the error names the hunk "
                "and line. Inspect the unit first to diff against its current source."
            ),
            input_schema=object_schema(
                {
                    "name": UNIT_NAME,
                    "patch": {"type": "string", "minLength": 1, "description": "The unified diff."},
                    "check_syntax": CHECK_SYNTAX,
                },
                ["name", "patch"],
            ),
            annotations={"destructiveHint": True},
        ),
        UNITS.adapter(
            reload,
            task_support="optional",
            title="Reload units",
            output_schema=RELOAD_OUTPUT,
            description=(
                "Load (or load again) a unit: run its current source in a fresh Python process "
                "of its own, sandboxed like a shell command (writes only the file root, standard "
                "library only, at most 30 s), never in the host. An exception while loading, a "
                "SyntaxError included, becomes the unit's error status (type, message, line, "
                "traceback) instead of failing the host. Returns the status and, when loaded, the "
                "public names the unit defined."
            ),
            input_schema=object_schema({"name": UNIT_NAME}, ["name"]),
            annotations={"destructiveHint": True, "openWorldHint": True},
        ),
    ]
