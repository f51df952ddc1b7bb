"""A one-off greeter plugin for the plugins-folder tests: its module and its presets."""

GREET_MODULE = """\
from agent_presets import ToolAdapter, hookimpl


def _hello(app, arguments):
    return "hello, " + arguments.get("name", "world")


@hookimpl
def presets_tool_adapters():
    return [
        ToolAdapter(
            "greet.hello",
            "space_greet_hello",
            "Say hello.",
            {"type": "object", "properties": {"name": {"type": "string"}}},
            _hello,
        )
    ]
"""

GREET_PRESETS = """\
presets:
  - name: greet-tools
    default_state: auto
    risk: normal
    contexts: [{surface: any}]
    tool_ids: [greet.hello]
"""
