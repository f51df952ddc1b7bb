"""``presets doctor``: which features this machine can run, and what to install for the rest.

A feature is a preset (its tools' runtimes must be ready: the shell preset
needs a working sandbox) or an optional part of the core that an extra
installs. Each is asked the way ``serve`` would ask it, on a scratch served
host, so the answer is the one a server started here would meet.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from dataclasses import asdict, dataclass
from typing import Final

import click

from agent_presets.cli.options import emit_json, load_installed, plugins_dir_option, table

EXTRAS: Final = (
    ("redis", "redis", "a store shared by replicas (serve --store redis://HOST:PORT/DB)"),
    ("opentelemetry.sdk", "otel", "exporting spans and metrics (the OpenTelemetry SDK)"),
    ("pytest", "testing", "the plugin test kit (agent_presets.testing)"),
)
"""``(module, extra, feature)``: what an extra of the core distribution installs."""


@dataclass(frozen=True)
class Feature:
    """One feature: whether this machine can run it, and if not, why and what to do.

    ``kind`` is ``preset`` (``plugin`` names it) or ``extra`` (an extra of the
    core distribution; ``name`` is the extra's).
    """

    kind: str
    name: str
    ready: bool
    detail: str = ""
    plugin: str | None = None


def preset_features() -> tuple[list[Feature], list[str]]:
    """Every installed preset, ready or not, and the plugin problems met loading them."""
    from agent_presets.host import ServedHost

    plugin_set = load_installed(strict=False)
    with (
        tempfile.TemporaryDirectory(prefix="presets-doctor-") as scratch,
        ServedHost(f"{scratch}/state", f"{scratch}/root") as host,
    ):
        presets = host.start(plugin_set, strict=False)  # problems are reported, not raised
        features = []
        for preset in presets.registry.list():
            problems = (presets.tool_adapters.readiness_problem(t, host) for t in preset.tool_ids)
            problem = next((p for p in problems if p is not None), None)
            plugin = presets.preset_plugin.get(preset.name)
            features.append(Feature("preset", preset.name, problem is None, problem or "", plugin))
        messages = [str(p) for p in (*plugin_set.problems, *presets.problems)]
    return features, messages


def extra_features() -> list[Feature]:
    features = []
    for module, extra, what in EXTRAS:
        ready = importlib.util.find_spec(module.partition(".")[0]) is not None and (
            importlib.util.find_spec(module) is not None
        )
        detail = what if ready else f"{what}: pip install 'agent-presets[{extra}]'"
        features.append(Feature("extra", extra, ready, detail))
    return features


def rows(features: list[Feature]) -> list[tuple[str, str, str]]:
    """The table: a plugin's ready presets as one row, each preset not ready as its own."""
    plugins: dict[str | None, list[Feature]] = {}
    for f in features:
        if f.kind == "preset":
            plugins.setdefault(f.plugin, []).append(f)
    result = []
    for plugin, presets in plugins.items():
        ready = sum(f.ready for f in presets)
        result.append((f"plugin {plugin}", f"{ready} of {len(presets)} presets", ""))
        result += [(f"  preset {f.name}", "no", f.detail) for f in presets if not f.ready]
    result += [
        (f"extra [{f.name}]", "yes" if f.ready else "no", f.detail)
        for f in features
        if f.kind == "extra"
    ]
    return result


@click.command()
@plugins_dir_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def doctor(as_json: bool) -> None:
    """Which features this machine can run, and what to install for the rest.

    Every installed preset (ready when the runtimes its tools need work here:
    the shell preset needs the bubblewrap sandbox) and the core's optional
    extras. Exit status 1 when a plugin failed to load; a feature that is not
    ready is reported, not an error.
    """
    features, problems = preset_features()
    features += extra_features()
    if as_json:
        emit_json({"features": [asdict(f) for f in features], "problems": problems})
    else:
        table(None, ["feature", "ready", "what it is, or what to do"], rows(features))
        missing = sum(not f.ready for f in features)
        click.echo(f"{len(features) - missing} of {len(features)} features ready")
        for message in problems:
            click.echo(f"problem: {message}", err=True)
    if problems:
        sys.exit(1)
