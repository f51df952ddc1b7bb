"""Pieces of the MCP server (``agent_presets.server``) that read best on their own.

``explain`` and ``hints`` are pure and import nothing from ``mcp``, so other
commands may use them; ``fanout`` is server machinery and imports ``mcp``.
"""
