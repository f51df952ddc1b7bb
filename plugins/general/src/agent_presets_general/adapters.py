"""The general tools: the host's shell, its file root and a bash runner.

Each tool comes from the ``AdapterKit`` of its runtime, ``app.shell``, ``app.files``
or ``app.bash``, fetched when the tool is called, so a host can swap its shell or
file root at any time.
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from agent_presets import AdapterKit, ToolAdapter, ToolCall, object_schema, result_schema
from agent_presets_general.bash import MAX_TIMEOUT
from agent_presets_general.files import MAX_READ_BYTES, MAX_WRITE_BYTES
from agent_presets_general.space import SURFACES, THEMES

SHELL: Final = AdapterKit("shell")
FILES: Final = AdapterKit("files")
BASH: Final = AdapterKit("bash")

READ_ONLY: Final = {"readOnlyHint": True}

LARGE_FILE: Final = 64 * 1024
"""Bytes: reading or writing a file this large reports progress."""

SHELL_STATE_OUTPUT: Final = result_schema(
    {
        # Plain strings, not the headless host's values: a host brings its own shell.
        "surface": {"type": "string"},
        "activity": {"type": ["string", "null"]},
        "canvas_visible": {"type": "boolean"},
        "theme": {"type": "string"},
        "world": {"type": "string"},
        "worlds": {"type": "array", "items": {"type": "string"}},
    }
)
LIST_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "type": {"enum": ["file", "directory", "symlink", "other", "unknown"]},
                    "size": {"type": ["integer", "null"]},
                },
                "required": ["name", "type"],
            },
        },
        "truncated": {"type": "boolean"},
        "total": {"type": "integer"},
    },
    "required": ["path", "entries", "truncated", "total"],
}
READ_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "size": {"type": "integer"},
        "content": {"type": "string"},
    },
    "required": ["path", "size", "content"],
}
WRITE_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "size": {"type": "integer"},
        "created": {"type": "boolean"},
    },
    "required": ["path", "size", "created"],
}
BASH_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "exit_code": {"type": "integer"},
        "timed_out": {"type": "boolean"},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "stdout_truncated": {"type": "boolean"},
        "stderr_truncated": {"type": "boolean"},
        "duration_seconds": {"type": "number"},
        "timeout_seconds": {"type": "number"},
        "cancelled": {"type": "boolean"},
    },
    "required": ["exit_code", "timed_out", "stdout", "stderr"],
}


def _read_file(files: Any, args: dict[str, Any], call: ToolCall) -> Any:
    result = files.read(args["path"])
    if call.context is not None and result["size"] >= LARGE_FILE:
        call.context.progress(result["size"], result["size"], f"read {result['size']} bytes")
    return result


def _write_file(files: Any, args: dict[str, Any], call: ToolCall) -> Any:
    size = len(args["content"].encode("utf-8"))
    large = call.context is not None and size >= LARGE_FILE
    if large:
        assert call.context is not None
        call.context.progress(0, size, f"writing {size} bytes")
    result = files.write(args["path"], args["content"])
    if large:
        assert call.context is not None
        call.context.progress(size, size, f"wrote {size} bytes")
    return result


def _run_bash(bash: Any, args: dict[str, Any], call: ToolCall) -> Any:
    context = call.context
    if context is None:
        return bash.run(args["command"], args.get("timeout_seconds"))
    extra: dict[str, Any] = {}
    # A cancelled call (or task) kills the command at once, not when its time is up; a
    # host's own runner written before `stop` existed still gets the call.
    if "stop" in inspect.signature(bash.run).parameters:
        extra["stop"] = lambda: context.cancelled
    return bash.run(
        args["command"], args.get("timeout_seconds"), progress=context.progress, **extra
    )


WORLD_NAME: Final = {
    "type": "string",
    "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$",
    "description": "World name: 1-64 letters, digits, '-' or '_', starting with a letter or digit.",
}
REL_PATH: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "Path relative to the file root, e.g. 'notes/todo.md'. Absolute paths, '..' "
    "that leaves the root, and symlinks pointing out of it are refused.",
}


def _schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """Every property is required unless ``required`` says otherwise."""
    return object_schema(properties, list(properties) if required is None else required)


SHELL_STATE_NOTE: Final = (
    " Returns the new shell state: surface, activity, canvas_visible, theme, world, worlds."
)


def tool_adapters() -> list[ToolAdapter]:
    return [
        SHELL.adapter(
            "app.set-theme",
            lambda s, a: s.set_theme(a["theme"]),
            title="Set the theme",
            output_schema=SHELL_STATE_OUTPUT,
            description="Set the app's colour theme." + SHELL_STATE_NOTE,
            input_schema=_schema(
                {"theme": {"enum": list(THEMES), "description": "The theme to switch to."}}
            ),
            annotations={"idempotentHint": True},
        ),
        SHELL.adapter(
            "app.set-canvas-visible",
            lambda s, a: s.set_canvas_visible(a["visible"]),
            title="Show or hide the canvas",
            output_schema=SHELL_STATE_OUTPUT,
            description="Show or hide the 2D canvas panel." + SHELL_STATE_NOTE,
            input_schema=_schema(
                {
                    "visible": {
                        "type": "boolean",
                        "description": "true shows the canvas, false hides it",
                    }
                }
            ),
            annotations={"idempotentHint": True},
        ),
        SHELL.adapter(
            "app.set-activity",
            lambda s, a: s.set_activity(a["activity"]),
            title="Set the activity",
            output_schema=SHELL_STATE_OUTPUT,
            description=(
                "Set what the user is doing on the current surface: one of the activities the "
                "installed plugins declare (the prompt lists them); null clears it. The activity "
                "decides which tools are offered, so the tool list changes after this call."
                + SHELL_STATE_NOTE
            ),
            input_schema=_schema(
                {
                    "activity": {
                        "type": ["string", "null"],
                        "pattern": "^[a-z][a-z0-9_-]{0,63}$",
                        "description": "A declared activity's name, or null to clear it.",
                    }
                }
            ),
            annotations={"idempotentHint": True},
        ),
        SHELL.adapter(
            "app.switch-surface",
            lambda s, a: s.set_surface(a["surface"]),
            title="Switch surface",
            output_schema=SHELL_STATE_OUTPUT,
            description=(
                "Switch the interaction surface: 'scene' (3D world) or 'canvas' (2D work; "
                "switching to it also shows the canvas). The tool list changes to the "
                "surface's tools after this call." + SHELL_STATE_NOTE
            ),
            input_schema=_schema(
                {"surface": {"enum": list(SURFACES), "description": "The surface to switch to."}}
            ),
            annotations={"idempotentHint": True},
        ),
        SHELL.adapter(
            "app.create-world",
            lambda s, a: s.create_world(a["name"]),
            title="Create a world",
            output_schema=SHELL_STATE_OUTPUT,
            description="Create a new, empty world (it does not switch to it)." + SHELL_STATE_NOTE,
            input_schema=_schema({"name": WORLD_NAME}),
        ),
        SHELL.adapter(
            "app.switch-world",
            lambda s, a: s.switch_world(a["name"]),
            title="Switch world",
            output_schema=SHELL_STATE_OUTPUT,
            description=(
                "Make an existing world the current one; world-specific tools (drawing, scene, "
                "graph) then act on that world's content." + SHELL_STATE_NOTE
            ),
            input_schema=_schema({"name": WORLD_NAME}),
            annotations={"idempotentHint": True},
        ),
        SHELL.adapter(
            "app.delete-world",
            lambda s, a: s.delete_world(a["name"]),
            title="Delete a world",
            output_schema=SHELL_STATE_OUTPUT,
            description=(
                "Delete a world and all its content for good. The current world cannot be deleted: "
                "switch to another one first." + SHELL_STATE_NOTE
            ),
            input_schema=_schema({"name": WORLD_NAME}),
            annotations={"destructiveHint": True},
        ),
        FILES.adapter(
            "app.list-files",
            lambda f, a: f.list(a.get("path", ".")),
            title="List files",
            output_schema=LIST_OUTPUT,
            description=(
                "List a folder under the file root: each entry's name, type (file, directory, "
                "symlink, other) and size in bytes for files. Without a path, lists the root."
            ),
            input_schema=_schema(
                {
                    "path": {
                        **REL_PATH,
                        "description": "Folder relative to the file root; default '.'.",
                    }
                },
                required=[],
            ),
            annotations=READ_ONLY,
        ),
        FILES.adapter(
            "app.read-file",
            _read_file,
            title="Read a file",
            output_schema=READ_OUTPUT,
            description=(
                "Read a UTF-8 text file under the file root "
                f"(at most {MAX_READ_BYTES // 1024} KiB). Binary and non-UTF-8 files are refused."
            ),
            input_schema=_schema({"path": REL_PATH}),
            annotations=READ_ONLY,
        ),
        FILES.adapter(
            "app.write-file",
            _write_file,
            title="Write a file",
            output_schema=WRITE_OUTPUT,
            description=(
                "Create or replace a UTF-8 text file under the file root with the given content "
                f"(at most {MAX_WRITE_BYTES // 1024} KiB). Missing parent folders are created. "
                "The write is atomic: readers see the old or the new file, never half of it."
            ),
            input_schema=_schema(
                {
                    "path": REL_PATH,
                    "content": {"type": "string", "description": "The file's complete new text."},
                }
            ),
            annotations={"destructiveHint": True, "idempotentHint": True},
        ),
        BASH.adapter(
            "app.run-bash",
            _run_bash,
            task_support="optional",
            title="Run a shell command",
            output_schema=BASH_OUTPUT,
            description=(
                "Run a command with `bash -c` in the file root folder, inside a sandbox: the file "
                "root is the only writable folder (besides a private /tmp emptied after each "
                "call), system folders are read-only, nothing else of the host exists (no home "
                "folders, no app state), there is no network unless the operator enabled it, and "
                "the environment is PATH, HOME (the file root), LANG and only what the operator "
                "passes. Returns exit_code (128+N: killed by signal N; -9: killed at the timeout), "
                "stdout, stderr (each cut after 64 KiB, with stdout_truncated/stderr_truncated "
                "set) and timed_out. Every process the command starts, in the background or with "
                "setsid, dies at the timeout or when the command ends. No input is given on stdin."
            ),
            input_schema=_schema(
                {
                    "command": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The bash command line, e.g. 'ls -la && git status'.",
                    },
                    "timeout_seconds": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "maximum": MAX_TIMEOUT,
                        "description": f"Seconds before the command is killed; default 30, "
                        f"at most {int(MAX_TIMEOUT)}.",
                    },
                },
                required=["command"],
            ),
            annotations={"destructiveHint": True, "openWorldHint": True},
        ),
    ]
