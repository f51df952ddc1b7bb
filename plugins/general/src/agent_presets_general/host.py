"""``SpaceHost``: the served host with the Space app's shell, for code that starts one itself.

``presets serve`` needs no such class: it starts the bare host, and the
general plugin's hooks give it the shell. Tests, benchmarks and apps that
start a host from code and want the Space app with any choice of plugins (a
drawing plugin alone, say) start this one: the shell is there from the
constructor on (a bad ``shell.json`` is refused at once, as the served host
refuses it at start), and ``start`` adds the Space app's fields and defaults
when the plugins given do not include the general plugin.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_presets.embed import PluginSet, load_plugins
from agent_presets.host import ServedHost
from agent_presets_general.space import SPACE_DEFAULTS, SpaceApp, install_shell

if TYPE_CHECKING:
    from agent_presets.embed import Presets


class SpaceHost(ServedHost):
    """The served host that is the Space app (``agent_presets_general.space``).

    Its ``defaults`` are ``SPACE_DEFAULTS`` unless a subclass gives its own;
    ``host.shell`` is the Space shell, and the worlds are its partitions.
    """

    defaults = SPACE_DEFAULTS

    def __init__(self, *args: Any, **options: Any) -> None:
        """``ServedHost``'s arguments; the shell is read from the state folder here."""
        super().__init__(*args, **options)
        try:
            install_shell(self)
        except BaseException:
            self.close()
            raise

    def start(self, plugins: PluginSet | Sequence[object] | None = None, **options: Any) -> Presets:
        """``ServedHost.start``, with the Space app among the plugins (see the module)."""
        plugin_set = plugins if isinstance(plugins, PluginSet) else load_plugins(plugins)
        general = sys.modules.get(__package__ or "")
        if not any(
            info.plugin is general or isinstance(info.plugin, SpaceApp)
            for info in plugin_set.plugins
        ):
            plugin_set.add(SpaceApp())
        return super().start(plugin_set, **options)
