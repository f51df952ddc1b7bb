"""The Space app: its context fields, its defaults and its shell, as a host plugin.

Space is the reference app the built-ins were written for: a 3D scene and a
2D canvas (the surfaces), what the user does on them (the activity, which
the plugins declare), whether the canvas is shown, a colour theme, and
worlds, each holding its own drawing, scene and graph. The core knows none
of it: the host ``presets serve`` runs is bare, and this plugin makes it
Space through the hooks any app plugin uses:

- ``presets_context_fields``: ``surface``, ``activity``, ``canvas_visible``
  and ``world_id`` (``SPACE_FIELDS``);
- ``presets_host_defaults``: the ``space_`` namespace, the starting context,
  the instructions, and that the canvas surface shows the canvas
  (``SPACE_DEFAULTS``);
- ``presets_headless_runtime``: the ``Shell``, attached as the host's
  ``shell`` runtime and keeping the host's context (``ContextKeeper``); the
  worlds are the host's partitions.

The shell saves what it keeps in ``shell.json`` in the state folder, in the
shape earlier versions wrote, so a state folder resumes whichever version
made it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from agent_presets import (
    ContextField,
    PresetError,
    PresetValidationError,
    ToolCallError,
    hookimpl,
    write_atomic,
)
from agent_presets.host import HostDefaults

if TYPE_CHECKING:
    from agent_presets.host import Host

SURFACES: Final = ("scene", "canvas")
THEMES: Final = ("light", "dark", "high-contrast")
DEFAULT_WORLD: Final = "home"
WORLD_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
SHELL_FILE: Final = "shell.json"
SPACE_FIELDS: Final = (
    ContextField(
        "surface",
        "string",
        SURFACES,
        "The surface the user is on: the 3D scene or the 2D canvas.",
        required=True,
    ),
    ContextField(
        "activity",
        "string",
        (),
        "What the user is doing on the surface (drawing, graph, ...); the plugins that "
        "use an activity declare it. None when there is none.",
    ),
    ContextField("canvas_visible", "boolean", None, "Whether the canvas is shown.", required=True),
    ContextField("world_id", "string", None, "The current world's name."),
)
"""The one declaration of the Space fields: the activities come only from the plugins
that have one, so the app declares the field with no values of its own. ``surface`` and
``canvas_visible`` are required (the seed's rule): the manager refuses a context without
them."""
CONTEXT_FIELDS: Final = tuple(field.name for field in SPACE_FIELDS)
"""The context the Space app reports: the fields ``SPACE_FIELDS`` declares."""

SPACE_DEFAULTS: Final = HostDefaults(
    namespace="space_",
    context=MappingProxyType({"surface": "scene", "activity": None, "canvas_visible": False}),
    # The prompt and resource are the MCP server's, named here in words.
    instructions=(
        "The tools offered here follow what the user is doing in the app (its surface and "
        "activity). When your own call changes that, your tool list stays as it is and the "
        "call's result names the tools that became active: run them with the presets_call tool "
        "(risky ones with presets_call_risky); presets_search finds any other. "
        "The prompt 'active-presets' and the resource presets://active/prompt hold guidance for "
        "the tools active now. A tool that is not active answers with what would turn it on."
    ),
    # Switching to the canvas shows it, unless the same change says otherwise.
    implied=MappingProxyType({"surface": {"canvas": {"canvas_visible": True}}}),
)


class Shell:
    """The Space app's shell: what the general tools drive, and the keeper of the host's context.

    The surface, activity, canvas visibility and current world are the
    host's context, read from and changed through the host, so each caller
    (principal) sees and changes its own. The theme and the list of worlds
    are the app's, shared by everyone. Every change is checked first (bad
    input changes nothing), then goes through the host, whose listeners may
    still refuse it, and is saved once accepted.
    """

    def __init__(self, host: Host) -> None:
        self._host = host
        self._path = host.state_dir / SHELL_FILE
        self._lock = threading.RLock()
        # What was never saved starts as the host's default context says (the Space
        # app's, on a host not started yet).
        saved = {**SPACE_DEFAULTS.context, **host.defaults.context, **(self._read() or {})}
        self.theme: str = saved.get("theme", "light")
        self.worlds: list[str] = list(saved.get("worlds", [DEFAULT_WORLD]))
        world = saved.get("world", self.worlds[0] if self.worlds else DEFAULT_WORLD)
        self._local: dict[str, Any] = {
            "surface": saved["surface"],
            "activity": saved["activity"],
            "canvas_visible": saved["canvas_visible"],
            "world_id": world,
        }

    # -- what the caller sees ------------------------------------------------

    @property
    def surface(self) -> str:
        return str(self._caller()["surface"])

    @property
    def activity(self) -> str | None:
        activity = self._caller()["activity"]
        return None if activity is None else str(activity)

    @property
    def canvas_visible(self) -> bool:
        return bool(self._caller()["canvas_visible"])

    @property
    def world(self) -> str:
        return str(self._caller()["world_id"])

    def state(self) -> dict[str, Any]:
        """The shell as the caller sees it: its context, the theme and the worlds."""
        return self._state_of(self._caller())

    def _state_of(self, context: Mapping[str, Any]) -> dict[str, Any]:
        """The shell in ``context``: what ``state()`` answers and ``shell.json`` holds."""
        return {
            "surface": context["surface"],
            "activity": context["activity"],
            "canvas_visible": context["canvas_visible"],
            "theme": self.theme,
            "world": context["world_id"],
            "worlds": list(self.worlds),
        }

    def to_state(self) -> dict[str, Any]:
        """What a snapshot of the host compares (``agent_presets.testing``)."""
        return self.state()

    def _caller(self) -> dict[str, Any]:
        # Fields a principal's context lacks are the host's own.
        return {**self._local, **self._host.context()}

    # -- changes -------------------------------------------------------------

    # Surfaces and activities are checked by the manager against the declared
    # vocabulary (these surfaces and what plugins add): here only their shape.

    def set_surface(self, surface: str) -> dict[str, Any]:
        return self._change({"surface": surface})

    def set_activity(self, activity: str | None) -> dict[str, Any]:
        return self._change({"activity": activity})

    def set_canvas_visible(self, visible: bool) -> dict[str, Any]:
        if not isinstance(visible, bool):
            raise ToolCallError(f"visible must be true or false, not {visible!r}")
        return self._change({"canvas_visible": visible})

    def set_theme(self, theme: str) -> dict[str, Any]:
        """The theme is the app's, not a caller's."""
        if theme not in THEMES:
            raise ToolCallError(f"unknown theme {theme!r}; use one of: {', '.join(THEMES)}")
        with self._lock:
            self.theme = theme
            self._write()
            return self.state()

    def create_world(self, name: str) -> dict[str, Any]:
        self._check_world_name(name)
        with self._lock:
            if name in self.worlds:
                raise ToolCallError(f"world {name!r} already exists; switch to it instead")
            self.worlds.append(name)
            self._write()
            return self.state()

    def switch_world(self, name: str) -> dict[str, Any]:
        return self._change({"world_id": name})

    def delete_world(self, name: str) -> dict[str, Any]:
        with self._lock:
            self._require_world(name)
            if name == self.world:
                raise ToolCallError(
                    f"world {name!r} is the current world; switch to another world before "
                    "deleting it"
                )
            self.worlds.remove(name)
            self._write()
            self._host.drop_partition(name)
            return self.state()

    def _change(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._host.update_context(changes)
            return self.state()

    # -- the host's context (ContextKeeper) ----------------------------------

    def load(self) -> dict[str, Any]:
        return dict(self._local)

    def change(self, context: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
        """The context after ``changes``, each field's shape checked; ``world_id`` must exist."""
        unknown = sorted(set(changes) - set(CONTEXT_FIELDS))
        if unknown:
            raise PresetValidationError(
                f"the Space app's context has no field {unknown[0]!r}; it holds "
                f"{', '.join(CONTEXT_FIELDS)}"
            )
        new = {**self._local, **context}
        for key, value in changes.items():
            if key == "surface" and not _is_name(value):
                raise ToolCallError(f"surface {value!r} must be a name, such as 'canvas'")
            if key == "activity" and value is not None and not _is_name(value):
                raise ToolCallError(
                    f"activity {value!r} must be a name (one the plugins declare), or null to "
                    "clear it"
                )
            if key == "canvas_visible" and not isinstance(value, bool):
                raise ToolCallError(f"canvas_visible must be true or false, not {value!r}")
            if key == "world_id":
                self._require_world(value)
            new[key] = value
        return new

    def save(self, context: Mapping[str, Any]) -> None:
        with self._lock:
            self._local = {key: context.get(key) for key in CONTEXT_FIELDS}
            self._write()

    def partition(self, context: Mapping[str, Any]) -> str:
        return str(context.get("world_id") or self._local["world_id"])

    def partitions(self) -> Sequence[str]:
        return list(self.worlds)

    # -- saved state -----------------------------------------------------------

    def _read(self) -> dict[str, Any] | None:
        import json

        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            saved = json.loads(text)
        except ValueError as exc:
            problem: str | None = f"not valid JSON ({exc})"
        else:
            problem = saved_state_problem(saved)
        if problem is not None:
            raise PresetError(
                f"{self._path}: the saved shell state is unusable: {problem}; fix the file, or "
                "delete it to start with the default shell (worlds are kept)"
            )
        return saved  # type: ignore[no-any-return]

    def _write(self) -> None:
        import json

        # As earlier versions wrote it (agent_presets' JSON state files): one shape on disk.
        state = self._state_of(self._local)
        data = json.dumps(state, indent=1, sort_keys=True).encode("utf-8") + b"\n"
        write_atomic(self._path, data)

    def _check_world_name(self, name: object) -> None:
        if not isinstance(name, str) or not WORLD_RE.match(name):
            raise ToolCallError(
                f"world name {name!r} must be 1-64 letters, digits, '-' or '_', "
                "starting with a letter or digit"
            )

    def _require_world(self, name: object) -> None:
        if name not in self.worlds:
            raise ToolCallError(
                f"no world named {name!r}; existing worlds: {', '.join(self.worlds)}"
            )


def saved_state_problem(saved: object) -> str | None:
    """Why a saved shell state cannot be used, or None when it can."""
    if not isinstance(saved, dict):
        return f"expected a JSON object, found {type(saved).__name__}"
    checks: list[tuple[str, Callable[[Any], bool], str]] = [
        # Which surfaces and activities exist is declared (the vocabulary), and
        # plugins add to it: a saved one is checked by name here, by value later.
        ("surface", _is_name, "a surface name"),
        ("activity", lambda v: v is None or _is_name(v), "null or an activity name"),
        ("canvas_visible", lambda v: isinstance(v, bool), "true or false"),
        ("theme", lambda v: v in THEMES, f"one of {', '.join(THEMES)}"),
        (
            "worlds",
            lambda v: (
                isinstance(v, list)
                and bool(v)
                and len(set(map(str, v))) == len(v)
                and all(isinstance(w, str) and WORLD_RE.match(w) for w in v)
            ),
            "a non-empty list of distinct world names",
        ),
    ]
    for key, ok, expected in checks:
        if key in saved and not ok(saved[key]):
            return f"{key!r} is {saved[key]!r}; expected {expected}"
    if "world" in saved and saved["world"] not in saved.get("worlds", [DEFAULT_WORLD]):
        return f"'world' is {saved['world']!r}, which is not in 'worlds'"
    return None


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 200


def install_shell(host: Host) -> Shell:
    """Give ``host`` the Space shell: its ``shell`` runtime, and the keeper of its context.

    A host that has it already (a ``SpaceHost``) keeps the one it has.
    """
    if "shell" in host.runtime_names():
        shell = host.runtime("shell")
        if isinstance(shell, Shell):
            return shell
    shell = Shell(host)
    host.keep_context(shell)
    # A shell call changes what the partition runtimes are (a world switch): it runs alone.
    host.attach("shell", shell, exclusive=True)
    return shell


class SpaceApp:
    """The Space app as a plugin object: what the general plugin is besides its tools.

    Register it beside plugins that need the Space app but not the general
    tools (a drawing plugin's tests, say); the general plugin's own hooks
    are these.
    """

    __name__ = "space"

    def __repr__(self) -> str:
        return "SpaceApp()"

    @hookimpl
    def presets_context_fields(self) -> list[ContextField]:
        return list(SPACE_FIELDS)

    @hookimpl
    def presets_host_defaults(self) -> HostDefaults:
        return SPACE_DEFAULTS

    @hookimpl
    def presets_headless_runtime(self, host: Host) -> None:
        install_shell(host)
