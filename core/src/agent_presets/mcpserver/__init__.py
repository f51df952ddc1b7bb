"""Pieces of the MCP server (``agent_presets.server``) that read best on their own.

``hints`` (risk -> tool annotations) is pure; ``fanout`` (change notices to
every client) is server machinery and imports ``mcp``.
"""
