"""What the headless host supplies that the core has no opinion of: ``HEADLESS_DEFAULTS``.

The namespace of its tools, the context it starts in (the shell's, before
anything was saved; the CLI's ``resolve`` and ``explain`` speak it too), and
the instructions its MCP server gives the agent. An embedding app supplies
its own ``HostDefaults`` as its ``defaults`` attribute.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from agent_presets.boot import HostDefaults

HEADLESS_DEFAULTS: Final = HostDefaults(
    namespace="space_",
    context=MappingProxyType({"surface": "scene", "activity": None, "canvas_visible": False}),
    # The prompt and resource are the MCP server's (server.mcp.wire PROMPT_NAME,
    # PROMPT_URI), named here in words: the host does not import the server.
    instructions=(
        "The tools offered here follow what the user is doing in the app (its surface and "
        "activity). When your own call changes that, your tool list stays as it is and the "
        "call's result names the tools that became active: run them with the presets_call tool "
        "(risky ones with presets_call_risky); presets_search finds any other. "
        "The prompt 'active-presets' and the resource presets://active/prompt hold guidance for "
        "the tools active now. A tool that is not active answers with what would turn it on."
    ),
)
