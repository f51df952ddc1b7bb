"""The general tools: the host's shell, its file root and a bash runner.

Every handler fetches its runtime from the app when it is called
(``require_runtime``), so a host can swap its shell or file root at any time.
"""

from __future__ import annotations

from typing import Any, Final

from agent_presets import ToolAdapter, require_runtime
from agent_presets.host import SURFACES, THEMES
from agent_presets_general.bash import MAX_TIMEOUT
from agent_presets_general.files import MAX_READ_BYTES, MAX_WRITE_BYTES

READ_ONLY: Final = {"readOnlyHint": True}

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
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


# -- shell -------------------------------------------------------------------


def set_theme(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_set_theme")
    return shell.set_theme(arguments["theme"])


def set_canvas_visible(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_set_canvas_visible")
    return shell.set_canvas_visible(arguments["visible"])


def set_activity(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_set_activity")
    return shell.set_activity(arguments["activity"])


def switch_surface(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_switch_surface")
    return shell.set_surface(arguments["surface"])


def create_world(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_create_world")
    return shell.create_world(arguments["name"])


def switch_world(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_switch_world")
    return shell.switch_world(arguments["name"])


def delete_world(app: Any, arguments: dict[str, Any]) -> Any:
    shell = require_runtime(app, "shell", "space_app_delete_world")
    return shell.delete_world(arguments["name"])


# -- files and bash ------------------------------------------------------------


def list_files(app: Any, arguments: dict[str, Any]) -> Any:
    files = require_runtime(app, "files", "space_app_list_files")
    return files.list(arguments.get("path", "."))


def read_file(app: Any, arguments: dict[str, Any]) -> Any:
    files = require_runtime(app, "files", "space_app_read_file")
    return files.read(arguments["path"])


def write_file(app: Any, arguments: dict[str, Any]) -> Any:
    files = require_runtime(app, "files", "space_app_write_file")
    return files.write(arguments["path"], arguments["content"])


def run_bash(app: Any, arguments: dict[str, Any]) -> Any:
    bash = require_runtime(app, "bash", "space_app_run_bash")
    return bash.run(arguments["command"], arguments.get("timeout_seconds"))


SHELL_STATE_NOTE: Final = (
    " Returns the new shell state: surface, activity, canvas_visible, theme, world, worlds."
)

ADAPTERS: Final = [
    ToolAdapter(
        id="app.set-theme",
        mcp_name="space_app_set_theme",
        description="Set the app's colour theme." + SHELL_STATE_NOTE,
        input_schema=_schema(
            {"theme": {"enum": list(THEMES), "description": "The theme to switch to."}}
        ),
        handler=set_theme,
        annotations={"idempotentHint": True},
    ),
    ToolAdapter(
        id="app.set-canvas-visible",
        mcp_name="space_app_set_canvas_visible",
        description="Show or hide the 2D canvas panel." + SHELL_STATE_NOTE,
        input_schema=_schema(
            {"visible": {"type": "boolean", "description": "true shows the canvas, false hides it"}}
        ),
        handler=set_canvas_visible,
        annotations={"idempotentHint": True},
    ),
    ToolAdapter(
        id="app.set-activity",
        mcp_name="space_app_set_activity",
        description=(
            "Set what the user is doing on the current surface, e.g. 'drawing' or 'graph' on the "
            "canvas; null clears it. The activity decides which drawing/graph tools are offered, "
            "so the tool list changes after this call." + SHELL_STATE_NOTE
        ),
        input_schema=_schema(
            {
                "activity": {
                    "type": ["string", "null"],
                    "pattern": "^[a-z][a-z0-9_-]{0,63}$",
                    "description": "Lowercase activity name such as 'drawing' or 'graph', "
                    "or null to clear it.",
                }
            }
        ),
        handler=set_activity,
        annotations={"idempotentHint": True},
    ),
    ToolAdapter(
        id="app.switch-surface",
        mcp_name="space_app_switch_surface",
        description=(
            "Switch the interaction surface: 'scene' (3D world) or 'canvas' (2D drawing and "
            "graph; switching to it also shows the canvas). The tool list changes to the "
            "surface's tools after this call." + SHELL_STATE_NOTE
        ),
        input_schema=_schema(
            {"surface": {"enum": list(SURFACES), "description": "The surface to switch to."}}
        ),
        handler=switch_surface,
        annotations={"idempotentHint": True},
    ),
    ToolAdapter(
        id="app.create-world",
        mcp_name="space_app_create_world",
        description="Create a new, empty world (it does not switch to it)." + SHELL_STATE_NOTE,
        input_schema=_schema({"name": WORLD_NAME}),
        handler=create_world,
    ),
    ToolAdapter(
        id="app.switch-world",
        mcp_name="space_app_switch_world",
        description=(
            "Make an existing world the current one; world-specific tools (drawing, scene, "
            "graph) then act on that world's content." + SHELL_STATE_NOTE
        ),
        input_schema=_schema({"name": WORLD_NAME}),
        handler=switch_world,
        annotations={"idempotentHint": True},
    ),
    ToolAdapter(
        id="app.delete-world",
        mcp_name="space_app_delete_world",
        description=(
            "Delete a world and all its content for good. The current world cannot be deleted: "
            "switch to another one first." + SHELL_STATE_NOTE
        ),
        input_schema=_schema({"name": WORLD_NAME}),
        handler=delete_world,
        annotations={"destructiveHint": True},
    ),
    ToolAdapter(
        id="app.list-files",
        mcp_name="space_app_list_files",
        description=(
            "List a folder under the file root: each entry's name, type (file, directory, "
            "symlink, other) and size in bytes for files. Without a path, lists the root."
        ),
        input_schema=_schema(
            {"path": {**REL_PATH, "description": "Folder relative to the file root; default '.'."}},
            required=[],
        ),
        handler=list_files,
        annotations=READ_ONLY,
    ),
    ToolAdapter(
        id="app.read-file",
        mcp_name="space_app_read_file",
        description=(
            f"Read a UTF-8 text file under the file root (at most {MAX_READ_BYTES // 1024} KiB). "
            "Binary and non-UTF-8 files are refused."
        ),
        input_schema=_schema({"path": REL_PATH}),
        handler=read_file,
        annotations=READ_ONLY,
    ),
    ToolAdapter(
        id="app.write-file",
        mcp_name="space_app_write_file",
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
        handler=write_file,
        annotations={"destructiveHint": True, "idempotentHint": True},
    ),
    ToolAdapter(
        id="app.run-bash",
        mcp_name="space_app_run_bash",
        description=(
            "Run a command with `bash -c` in the file root folder. Returns exit_code (negative: "
            "killed by that signal), stdout, stderr (each cut after 64 KiB, with "
            "stdout_truncated/stderr_truncated set) and timed_out. On timeout the command and "
            "everything it started are killed; background processes never outlive the call. "
            "No input is given on stdin."
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
        handler=run_bash,
        annotations={"destructiveHint": True, "openWorldHint": True},
    ),
]
