"""``python -m agent_presets`` and the ``presets`` executable: the command line."""

from agent_presets import _startup


def main() -> None:
    """Run the ``presets`` command line, its start-up with the collector paused (``_startup``)."""
    _startup.pause()
    from agent_presets.cli import main as command_line

    command_line(prog_name="presets")


if __name__ == "__main__":
    main()
