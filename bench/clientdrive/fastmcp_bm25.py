"""FastMCP 4.2.3's BM25 search transform in front of a stdio MCP server (run with the
bench's FastMCP virtual environment, not the project's).

usage: fastmcp_bm25.py CMD [ARGS...]

A FastMCP proxy (``fastmcp.server.create_proxy``) of the server CMD, with
``fastmcp.server.transforms.search.BM25SearchTransform()`` at its defaults
(5 results, its ``search_tools`` and ``call_tool``): clients list those two
tools, and every call reaches CMD.
"""

import sys

from fastmcp.server import create_proxy
from fastmcp.server.transforms.search import BM25SearchTransform

cmd = sys.argv[1:]
proxy = create_proxy(
    {"mcpServers": {"presets": {"command": cmd[0], "args": cmd[1:]}}}, name="presets"
)
proxy.add_transform(BM25SearchTransform())
proxy.run(show_banner=False)
