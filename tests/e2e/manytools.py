"""A plugin of many no-op tools (as ``bench/server.py`` builds), for tests of long tool lists.

Run as a script it serves them over HTTP on 127.0.0.1 (``--port 0`` picks a
free port) and prints the banner on stderr, as ``presets serve`` does:
``python manytools.py COUNT [PORT]``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_presets import ToolAdapter, bootstrap, hookimpl
from agent_presets.lib.boot import Presets
from agent_presets.lib.tools import ToolRegistry

SCHEMA = {"type": "object", "properties": {"value": {"type": "integer"}}}


def tool_name(i: int) -> str:
    return f"space_noop_{i:03d}"


class ManyTools:
    """One preset, on in every context, holding ``count`` no-op tools."""

    def __init__(self, count: int, folder: Path) -> None:
        self.ids = [f"many.noop-{i:03d}" for i in range(count)]
        self.preset_file = folder / "many.yaml"
        self.preset_file.write_text(
            "presets:\n  - name: many-tools\n    default_state: auto\n    risk: normal\n"
            "    contexts: [{surface: any}]\n    tool_ids: [" + ", ".join(self.ids) + "]\n"
        )

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.preset_file]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [
            ToolAdapter(tool_id, tool_name(i), f"No-op tool {i}.", SCHEMA, _noop)
            for i, tool_id in enumerate(self.ids)
        ]


def _noop(app: Any, arguments: dict[str, Any]) -> None:
    return None


def many_tools(count: int, folder: Path) -> Presets:
    context = {"surface": "scene", "canvas_visible": False}
    # The namespace the tests name the tools in.
    return bootstrap(
        None,
        plugins=[ManyTools(count, folder)],
        context=context,
        tool_registry=ToolRegistry("space_"),
    )


def main() -> None:
    from agent_presets.server.mcp import serve

    count = int(sys.argv[1])
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    presets = many_tools(count, Path(tempfile.mkdtemp(prefix="presets-many-")))
    serve(
        presets,
        transport="http",
        port=port,
        banner=lambda line: print(line, file=sys.stderr, flush=True),
    )


if __name__ == "__main__":
    main()
