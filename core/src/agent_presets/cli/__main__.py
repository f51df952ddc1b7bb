"""``python -m agent_presets.cli``: the ``presets`` command line."""

from agent_presets.cli import main

main(prog_name="presets")
