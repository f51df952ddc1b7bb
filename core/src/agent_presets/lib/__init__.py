"""The library: presets and their rules, loading, matching, the registries and the manager,
tool adapters, sync, the plugin catalog and the budget.

It imports nothing from the served process (``agent_presets.server``) or the
command line (``agent_presets.cli``): one import-linter contract holds that
(``pyproject.toml``). Its public names load from ``agent_presets`` (a plugin
author's) and ``agent_presets.embed`` (an embedder's); import them from there.
"""
