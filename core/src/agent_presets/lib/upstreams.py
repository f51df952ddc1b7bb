"""Upstream MCP servers as tool sources: their declarations, snapshots and tool adapters.

A preset file may declare upstream servers under ``upstreams:`` (a plugin
may return them from ``presets_upstreams``); each tool an upstream lists
becomes a tool adapter with id ``NAME.TOOL``, named over MCP as every other
tool is (the id with ``.`` and ``-`` as ``_``, under the host's namespace).
This module is the library half: what a declaration says, how a tool's id
and name are made, what the lock file beside a preset file holds
(``presets upstreams snapshot`` writes it), and the rules a preset meets
when it lists upstream tools. It never imports ``mcp``: ``presets
validate`` checks upstream tools from their snapshot, without starting
anything. The running half (starting upstreams, forwarding calls) is
``agent_presets.server.mcp.upstream``; an adapter made here reaches it at
call time as the app's ``upstreams`` runtime.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from agent_presets.lib.adapters import (
    ANNOTATION_KEYS,
    MCP_NAME_RE,
    ToolAdapter,
    ToolCall,
    default_name,
    require_runtime,
)
from agent_presets.lib.model import (
    DANGEROUS_RISKS,
    TOOL_ID_RE,
    Preset,
    PresetError,
    PresetValidationError,
    ToolCallError,
)
from agent_presets.lib.schema import clip, describe, quote, schema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "LOCK_SUFFIX",
    "RESERVED_NAMES",
    "RUNTIME",
    "Snapshot",
    "Upstream",
    "UpstreamConfigError",
    "UpstreamForwarder",
    "UpstreamSet",
    "UpstreamTool",
    "gather_upstreams",
    "lock_path",
    "name_clash",
    "read_lock",
    "upstream_adapter",
    "write_lock",
]

LOCK_SUFFIX: Final = ".upstreams.lock.json"
"""A preset file ``NAME.yaml`` keeps its upstreams' snapshot in ``NAME.upstreams.lock.json``.

Not ``.yaml``: a plugins folder loads every ``*.yaml`` as a preset file.
"""
LOCK_VERSION: Final = 1
MAX_LOCK_SIZE: Final = 16 * 1024 * 1024
DEFAULT_START_TIMEOUT: Final = 60.0
"""Seconds an upstream may take to start and list its tools: a cold ``npx -y`` or
``uvx`` downloads its package first (5 to 10 seconds here, more on a slow network)."""
DEFAULT_CALL_TIMEOUT: Final = 300.0
"""Seconds a forwarded call waits for its answer before the upstream counts as hung."""
RUNTIME: Final = "upstreams"
"""The app attribute the forwarding runtime is reached at (the server attaches it)."""

INHERITED_ENV: Final = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "UV_CACHE_DIR",
    "npm_config_cache",
)
"""What a command upstream inherits from the server's environment; ``env`` adds the rest.

The few a program needs to run at all (the SDK's default set), the locale,
and what lets ``npx`` and ``uvx`` reach their registry (certificates,
proxies, caches). Nothing else leaks: a token of the server's is passed only
by naming it, ``env: {TOKEN: "${TOKEN}"}``.
"""


RESERVED_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {"presets": "presets_request, presets_search and presets_call"}
)
"""Upstream names refused: the first part of the MCP names of the server's own tools."""


class UpstreamConfigError(PresetError):
    """An upstream cannot be started as declared (an unset ``${NAME}``, a bad command)."""


# --------------------------------------------------------------------- declarations


@cache
def _validator() -> Validator:
    import jsonschema

    defs = schema()["$defs"]
    return jsonschema.Draft202012Validator({"$defs": defs, "$ref": "#/$defs/upstream"})


@dataclass(frozen=True)
class Upstream:
    """One declared upstream server. Constructing one validates it against the schema.

    ``command`` starts it over stdio, ``url`` reaches it over streamable HTTP
    (with ``headers``); ``{root}`` and ``${NAME}`` in them are substituted
    when it starts (``launch``), never before, so a snapshot and its
    declaration say the same whatever the machine. ``source`` and ``line``
    are where it is declared; ``lock`` is the snapshot file that goes with it.
    """

    name: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    strip_prefix: str | None = None
    roots: tuple[str, ...] | None = None
    start_timeout: float = DEFAULT_START_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    lock: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.command is not None and not isinstance(self.command, tuple):
            object.__setattr__(self, "command", tuple(self.command))
        if self.roots is not None and not isinstance(self.roots, tuple):
            object.__setattr__(self, "roots", tuple(self.roots))
        problems = upstream_problems(self.to_dict())
        if problems:
            raise PresetValidationError("; ".join(problems), source=self.source, line=self.line)
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))

    @classmethod
    def from_dict(
        cls,
        mapping: Mapping[str, Any],
        *,
        source: str | None = None,
        line: int | None = None,
        lock: Path | None = None,
    ) -> Upstream:
        """The upstream a preset file's ``upstreams:`` entry declares (validated)."""
        problems = upstream_problems(mapping)
        if problems:
            raise PresetValidationError("; ".join(problems), source=source, line=line)
        return cls(
            name=mapping["name"],
            command=tuple(mapping["command"]) if "command" in mapping else None,
            url=mapping.get("url"),
            headers=dict(mapping.get("headers", {})),
            env=dict(mapping.get("env", {})),
            strip_prefix=mapping.get("strip_prefix"),
            roots=tuple(mapping["roots"]) if "roots" in mapping else None,
            start_timeout=float(mapping.get("start_timeout", DEFAULT_START_TIMEOUT)),
            call_timeout=float(mapping.get("call_timeout", DEFAULT_CALL_TIMEOUT)),
            source=source,
            line=line,
            lock=lock,
        )

    def to_dict(self) -> dict[str, Any]:
        """The declaration as a preset file writes it (defaults left out)."""
        data: dict[str, Any] = {"name": self.name}
        if self.command is not None:
            data["command"] = list(self.command)
        if self.url is not None:
            data["url"] = self.url
        if self.headers:
            data["headers"] = dict(self.headers)
        if self.env:
            data["env"] = dict(self.env)
        if self.strip_prefix is not None:
            data["strip_prefix"] = self.strip_prefix
        if self.roots is not None:
            data["roots"] = list(self.roots)
        if self.start_timeout != DEFAULT_START_TIMEOUT:
            data["start_timeout"] = self.start_timeout
        if self.call_timeout != DEFAULT_CALL_TIMEOUT:
            data["call_timeout"] = self.call_timeout
        return data

    @property
    def where(self) -> str:
        """``file:line`` of the declaration, or the upstream's name when that is not known."""
        if self.source is None:
            return f"upstream {self.name!r}"
        return f"{self.source}:{self.line}" if self.line is not None else self.source

    def declaration(self) -> str:
        """A digest of what decides the upstream's tool list, kept in its snapshot.

        Header and environment values are left out (only their names count):
        they may hold secrets, and a lock file is committed.
        """
        data = {
            "name": self.name,
            "command": list(self.command) if self.command is not None else None,
            "url": self.url,
            "headers": sorted(self.headers),
            "env": sorted(self.env),
            "strip_prefix": self.strip_prefix,
            "roots": list(self.roots) if self.roots is not None else None,
        }
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def runtime(self) -> str:
        """The runtime its tools' calls touch (``ToolAdapter.runtime``): its own process alone."""
        return f"upstream_{self.name}"

    # -- naming ----------------------------------------------------------------

    def tool_id(self, tool_name: str) -> str:
        """``NAME.TOOL``: the upstream's tool name as it spells it, less ``strip_prefix``."""
        prefix = self.strip_prefix
        if prefix and tool_name.startswith(prefix) and len(tool_name) > len(prefix):
            tool_name = tool_name[len(prefix) :]
        return f"{self.name}.{tool_name}"

    # -- starting ----------------------------------------------------------------

    def launch(self, root: str | Path | None, environ: Mapping[str, str] | None = None) -> Launch:
        """What to start or reach, with ``{root}`` and ``${NAME}`` substituted now.

        Raises ``UpstreamConfigError`` naming the upstream and the variable
        that is not set.
        """
        env_source = os.environ if environ is None else environ

        def fill(text: str, *, with_root: bool = True) -> str:
            return substitute(text, root if with_root else None, env_source, self)

        inherited = {k: env_source[k] for k in INHERITED_ENV if k in env_source}
        return Launch(
            command=tuple(fill(part) for part in self.command) if self.command else None,
            url=fill(self.url, with_root=False) if self.url is not None else None,
            headers={k: fill(v, with_root=False) for k, v in self.headers.items()},
            env={**inherited, **{k: fill(v) for k, v in self.env.items()}},
            roots=tuple(fill(r) for r in self.roots) if self.roots is not None else None,
        )


def upstream_problems(mapping: Any) -> list[str]:
    """Every rule an ``upstreams:`` entry breaks, worded as the preset file's problems are."""
    errors = sorted(_validator().iter_errors(mapping), key=lambda e: list(map(str, e.path)))
    name = mapping.get("name") if isinstance(mapping, Mapping) else None
    label = f"upstream {quote(name)}: " if isinstance(name, str) else ""
    return [label + describe(error, None) for error in errors]


@dataclass(frozen=True)
class Launch:
    """An upstream's declaration with every placeholder filled in: ready to start or reach."""

    command: tuple[str, ...] | None
    url: str | None
    headers: Mapping[str, str]
    env: Mapping[str, str]
    roots: tuple[str, ...] | None


_VARIABLE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(
    text: str, root: str | Path | None, environ: Mapping[str, str], upstream: Upstream
) -> str:
    """``text`` with ``{root}`` (the host's file root) and each ``${NAME}`` filled in."""

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise UpstreamConfigError(
                f"{upstream.where}: upstream {upstream.name!r} needs ${{{name}}}, which is not "
                "set in the server's environment; set it before starting the server"
            )
        return environ[name]

    text = _VARIABLE.sub(variable, text)
    if "{root}" in text:
        if root is None:
            raise UpstreamConfigError(
                f"{upstream.where}: upstream {upstream.name!r} uses {{root}}, which only a "
                "command, its env and its roots may use, with a host that has a file root"
            )
        text = text.replace("{root}", str(root))
    return text


# --------------------------------------------------------------------- tools


@dataclass(frozen=True)
class UpstreamTool:
    """One tool as an upstream lists it (``tools/list``), in its wire spelling."""

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: Mapping[str, Any] | None = None
    title: str | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any]) -> UpstreamTool:
        annotations = entry.get("annotations")
        return cls(
            name=str(entry["name"]),
            description=entry.get("description"),
            input_schema=dict(entry.get("inputSchema") or {"type": "object"}),
            output_schema=dict(entry["outputSchema"]) if entry.get("outputSchema") else None,
            title=entry.get("title"),
            annotations=dict(annotations) if isinstance(annotations, Mapping) else {},
        )

    def to_wire(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            entry["title"] = self.title
        if self.description is not None:
            entry["description"] = self.description
        entry["inputSchema"] = _plain(self.input_schema)
        if self.output_schema is not None:
            entry["outputSchema"] = _plain(self.output_schema)
        if self.annotations:
            entry["annotations"] = _plain(self.annotations)
        return entry

    def declares_destructive(self) -> bool:
        """Whether the upstream says this tool may destroy data (``destructiveHint: true``).

        Only a tool that says so, and does not also say it only reads: MCP's
        defaults would call every unannotated tool destructive, which says
        nothing about the tool.
        """
        hints = self.annotations
        return hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class UpstreamForwarder(Protocol):
    """The app's ``upstreams`` runtime: what an upstream tool's handler calls at call time."""

    async def call(
        self, upstream: str, tool: str, arguments: dict[str, Any], call: ToolCall
    ) -> Any: ...


@dataclass(frozen=True)
class _Forward:
    """The handler of one upstream tool: forwards the call to the app's ``upstreams`` runtime.

    Async, so the server awaits it on its loop and a forwarded call takes no thread.
    """

    upstream: str
    tool: str
    hints_trusted: ClassVar[bool] = False
    """Its hints are the upstream's: they may add risk to its preset's, never lower it."""

    async def __call__(self, app: Any, arguments: dict[str, Any], call: ToolCall) -> Any:
        forwarder: UpstreamForwarder = require_runtime(app, RUNTIME, call.name)
        return await forwarder.call(self.upstream, self.tool, arguments, call)


def naming_problem(upstream: Upstream, tool_name: str) -> str | None:
    """Why a tool of ``upstream`` cannot be given an id and an MCP name, or None."""
    tool_id = upstream.tool_id(tool_name)
    if not TOOL_ID_RE.match(tool_id):
        return (
            f"tool {quote(tool_name)} cannot be given a tool id ({quote(tool_id)} is not "
            "NAME.TOOL with letters, digits, '_', '-' and '.')"
        )
    if not MCP_NAME_RE.match(default_name(tool_id)):
        return (
            f"tool {quote(tool_name)} cannot be given an MCP name ({quote(default_name(tool_id))})"
        )
    return None


def upstream_adapter(upstream: Upstream, tool: UpstreamTool) -> ToolAdapter:
    """The tool adapter of one upstream tool; ``PresetValidationError`` if it cannot be one.

    Its description, schemas, title and annotations are the upstream's; its
    runtime is ``upstream_NAME``, so the server runs one upstream's writes in
    order and different upstreams side by side.
    """
    problem = naming_problem(upstream, tool.name)
    if problem is not None:
        raise PresetValidationError(problem)
    title = tool.title or tool.annotations.get("title")
    hints = {k: v for k, v in tool.annotations.items() if k in ANNOTATION_KEYS and k != "title"}
    description = (tool.description or "").strip() or f"{tool.name} (upstream {upstream.name})"
    return ToolAdapter(
        upstream.tool_id(tool.name),
        description=description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        handler=_Forward(upstream.name, tool.name),
        runtime=upstream.runtime,
        title=title if isinstance(title, str) and title.strip() else None,
        annotations=hints or None,
        source=f"upstream {upstream.name}",
        defined_at=(upstream.source, upstream.line or 1) if upstream.source else None,
    )


def forwarded_name(adapter: ToolAdapter) -> tuple[str, str] | None:
    """``(upstream, tool name as the upstream spells it)`` of an upstream tool's adapter."""
    handler = adapter.handler
    return (handler.upstream, handler.tool) if isinstance(handler, _Forward) else None


def adapters_for(
    upstream: Upstream, tools: Iterable[UpstreamTool]
) -> tuple[list[ToolAdapter], list[str]]:
    """The adapters of an upstream's tools, and a message for each tool left out.

    A tool whose name cannot be made an id or MCP name, whose schema is not
    one, or whose MCP name another tool of the same upstream already has
    (``get-thing`` and ``get_thing``) is left out, never renamed.
    """
    adapters: list[ToolAdapter] = []
    problems: list[str] = []
    names: dict[str, str] = {}
    for tool in tools:
        try:
            adapter = upstream_adapter(upstream, tool)
        except PresetValidationError as exc:
            problems.append(f"upstream {upstream.name!r}: {exc.message}; it is left out")
            continue
        name = default_name(adapter.id)
        if name in names:
            problems.append(
                f"upstream {upstream.name!r}: tools {quote(names[name])} and {quote(tool.name)} "
                f"would both be named {name!r}; {quote(tool.name)} is left out"
            )
            continue
        names[name] = tool.name
        adapters.append(adapter)
    return adapters, problems


# --------------------------------------------------------------------- snapshots


@dataclass(frozen=True)
class Snapshot:
    """What an upstream listed when ``presets upstreams snapshot`` started it."""

    upstream: str
    declaration: str
    tools: tuple[UpstreamTool, ...]
    server: Mapping[str, Any] = field(default_factory=dict)
    protocol_version: str | None = None
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    server_capabilities: Mapping[str, Any] = field(default_factory=dict)
    taken_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "declaration": self.declaration,
            "taken_at": self.taken_at,
            "server": dict(self.server),
            "protocol_version": self.protocol_version,
            "client_capabilities": _plain(self.client_capabilities),
            "server_capabilities": _plain(self.server_capabilities),
            "tools": [tool.to_wire() for tool in self.tools],
        }

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> Snapshot:
        return cls(
            upstream=name,
            declaration=str(data["declaration"]),
            tools=tuple(UpstreamTool.from_wire(t) for t in data["tools"]),
            server=dict(data.get("server") or {}),
            protocol_version=data.get("protocol_version"),
            client_capabilities=dict(data.get("client_capabilities") or {}),
            server_capabilities=dict(data.get("server_capabilities") or {}),
            taken_at=data.get("taken_at"),
        )


def lock_path(preset_file: str | Path) -> Path:
    """The lock file beside a preset file: ``NAME.upstreams.lock.json`` for ``NAME.yaml``."""
    path = Path(preset_file)
    return path.with_name(path.stem + LOCK_SUFFIX)


def read_lock(path: Path) -> dict[str, Snapshot]:
    """The snapshots a lock file holds, by upstream name; {} when there is no file.

    A file that cannot be read is a ``PresetValidationError`` at the file.
    """
    source = str(path)
    try:
        if not path.is_file():
            return {}
        if path.stat().st_size > MAX_LOCK_SIZE:
            raise PresetValidationError(
                f"the lock file is over {MAX_LOCK_SIZE:,} bytes; snapshot fewer upstreams per file",
                source=source,
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("lock_version") != LOCK_VERSION:
            raise ValueError(f"not a version {LOCK_VERSION} upstream lock file")
        upstreams = data["upstreams"]
        return {
            str(name): Snapshot.from_json(str(name), entry) for name, entry in upstreams.items()
        }
    except PresetValidationError:
        raise
    except OSError as exc:
        raise PresetValidationError(
            f"cannot read the upstream lock file: {exc.strerror or exc}", source=source
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PresetValidationError(
            f"the upstream lock file is not valid ({clip(str(exc), 120)}); write it again with "
            "`presets upstreams snapshot`",
            source=source,
        ) from None


def write_lock(path: Path, snapshots: Iterable[Snapshot]) -> None:
    """Write (atomically) the lock file of ``snapshots``, sorted, for a stable diff."""
    from agent_presets.lib.atomicfile import write_atomic

    data = {
        "lock_version": LOCK_VERSION,
        "written_by": "presets upstreams snapshot",
        "upstreams": {s.upstream: s.to_json() for s in sorted(snapshots, key=lambda s: s.upstream)},
    }
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    write_atomic(path, text.encode("utf-8"))


# --------------------------------------------------------------------- the set


@dataclass
class UpstreamSet:
    """Every declared upstream of a catalog, with what is known of its tools.

    ``snapshots`` holds the current snapshot of each upstream that has one;
    ``adapters`` the tool adapters made from them. An upstream without a
    current snapshot has tools nobody knows yet: the presets that list them
    wait in ``pending`` until the running server has started it (``presets
    serve``), and ``unchecked`` says why for ``presets validate``, which
    cannot check them. ``start_at_once`` asks the server to start every
    upstream when it starts, rather than on first need.
    """

    upstreams: dict[str, Upstream] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    adapters: list[ToolAdapter] = field(default_factory=list)
    tools: dict[str, UpstreamTool] = field(default_factory=dict)
    problems: list[PresetValidationError] = field(default_factory=list)
    unchecked: list[PresetValidationError] = field(default_factory=list)
    pending: list[Preset] = field(default_factory=list)
    start_at_once: bool = False

    def __bool__(self) -> bool:
        return bool(self.upstreams)

    @property
    def runtimes(self) -> frozenset[str]:
        """The runtimes of the upstreams' tools (``Upstream.runtime``), one per upstream."""
        return frozenset(u.runtime for u in self.upstreams.values())

    def drop(self, name: str) -> None:
        """Forget the upstream ``name`` and its tools (it was refused)."""
        self.upstreams.pop(name, None)
        self.snapshots.pop(name, None)
        mine = name + "."
        self.adapters = [a for a in self.adapters if not a.id.startswith(mine)]
        self.tools = {k: v for k, v in self.tools.items() if not k.startswith(mine)}

    def owner(self, tool_id: str) -> Upstream | None:
        """The upstream whose tool ids ``tool_id`` is one of (by its first part), or None."""
        return self.upstreams.get(tool_id.partition(".")[0])

    def waits_for(self, tool_id: str) -> bool:
        """Whether ``tool_id`` belongs to an upstream whose tools are not known yet."""
        upstream = self.owner(tool_id)
        return upstream is not None and upstream.name not in self.snapshots

    def risk_problem(self, preset: Preset, tool_id: str) -> str | None:
        """Why ``preset``'s risk is lower than what the upstream tool ``tool_id`` declares."""
        tool = self.tools.get(tool_id)
        if tool is None or preset.risk in DANGEROUS_RISKS or not tool.declares_destructive():
            return None
        return (
            f"risk {preset.risk!r} is lower than what upstream tool {tool_id!r} declares "
            "(destructiveHint: true); list it in a preset of risk filesystem-write or "
            "destructive (which ships default_state: off)"
        )

    def uncovered(self, presets: Iterable[Preset]) -> dict[str, list[str]]:
        """Each upstream's tool ids that no preset lists: known, and never served."""
        listed = {t for p in [*presets, *self.pending] for t in p.tool_ids}
        found: dict[str, list[str]] = {}
        for tool_id in self.tools:
            upstream = self.owner(tool_id)
            if upstream is not None and tool_id not in listed:
                found.setdefault(upstream.name, []).append(tool_id)
        return found


def gather_upstreams(
    files: Mapping[str, str],
    hook_items: Iterable[tuple[str, Any]] = (),
) -> UpstreamSet:
    """The upstreams that preset files (``source -> text``) and hooks declare, with snapshots.

    Each file's entries were checked by the file schema already: an entry
    that breaks it is that file's problem and is skipped here. A name
    declared twice, a hook's bad return value, a lock file that cannot be
    read and a tool that cannot be named are ``problems``; a missing or
    outdated snapshot is ``unchecked``.
    """
    found = UpstreamSet()
    declared: list[Upstream] = []
    for source, text in files.items():
        if "upstreams" not in text:
            continue
        declared.extend(_declared_in(source, text))
    for plugin, item in hook_items:
        upstream = _hook_upstream(plugin, item, found)
        if upstream is not None:
            declared.append(upstream)
    for upstream in declared:
        if upstream.name in RESERVED_NAMES:
            found.problems.append(
                PresetValidationError(
                    f"upstream {upstream.name!r}: the server's own tools are named "
                    f"{upstream.name}_* ({RESERVED_NAMES[upstream.name]}), so an upstream may "
                    "not be; rename the upstream (the first part of its tool ids)",
                    source=upstream.source,
                    line=upstream.line,
                )
            )
            continue
        first = found.upstreams.get(upstream.name)
        if first is not None:
            found.problems.append(
                PresetValidationError(
                    f"upstream {upstream.name!r} is declared twice: at {first.where} and here; "
                    "an upstream name (the first part of its tool ids) is declared once: "
                    "rename one of them",
                    source=upstream.source,
                    line=upstream.line,
                )
            )
            continue
        found.upstreams[upstream.name] = upstream
    locks: dict[Path, dict[str, Snapshot] | None] = {}
    for upstream in found.upstreams.values():
        _attach_snapshot(upstream, found, locks)
    return found


def _declared_in(source: str, text: str) -> list[Upstream]:
    """The valid ``upstreams:`` entries of one preset file, each with its line."""
    import yaml  # only a file that mentions upstreams gets here

    from agent_presets.lib.yamlfile import PresetYamlLoader

    loader = PresetYamlLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError:
        return []  # the loader has reported it
    finally:
        loader.dispose()
    if not isinstance(root, yaml.MappingNode) or not isinstance(data, Mapping):
        return []
    items = data.get("upstreams")
    node = next((v for k, v in root.value if getattr(k, "value", None) == "upstreams"), None)
    if not isinstance(items, list) or not isinstance(node, yaml.SequenceNode):
        return []
    lock = lock_path(source)
    upstreams = []
    for item, item_node in zip(items, node.value, strict=False):
        try:
            upstreams.append(
                Upstream.from_dict(
                    item, source=source, line=item_node.start_mark.line + 1, lock=lock
                )
            )
        except PresetValidationError:
            continue  # the file schema reported it, at its field
    return upstreams


def _hook_upstream(plugin: str, item: Any, found: UpstreamSet) -> Upstream | None:
    if isinstance(item, Upstream):
        return item
    if isinstance(item, Mapping):
        try:
            return Upstream.from_dict(item, source=plugin)
        except PresetValidationError as exc:
            message = f"plugin {quote(plugin)}: presets_upstreams: {exc.message}"
    else:
        message = (
            f"plugin {quote(plugin)}: presets_upstreams returned {type(item).__name__}; "
            "return Upstream objects or mappings like a preset file's upstreams: entries"
        )
    found.problems.append(PresetValidationError(message, source=plugin))
    return None


def _attach_snapshot(
    upstream: Upstream, found: UpstreamSet, locks: dict[Path, dict[str, Snapshot] | None]
) -> None:
    """Use the upstream's snapshot when it is current; say why not when it is not."""
    source, line = upstream.source, upstream.line
    lock = upstream.lock
    if lock not in locks and lock is not None:
        try:
            locks[lock] = read_lock(lock)
        except PresetValidationError as exc:
            found.problems.append(exc)
            locks[lock] = None
    snapshots = locks.get(lock) if lock is not None else None
    snapshot = snapshots.get(upstream.name) if snapshots else None
    command = f"`presets upstreams snapshot {upstream.source}`" if upstream.source else ""
    target = f"{command or '`presets upstreams snapshot`'}" + (
        f" (it writes {lock.name})" if lock is not None else ""
    )
    if snapshot is None:
        found.unchecked.append(
            PresetValidationError(
                f"upstream {upstream.name!r} has no snapshot, so its tool ids, schemas and "
                f"risks are not checked; run {target}",
                source=source,
                line=line,
            )
        )
        return
    if snapshot.declaration != upstream.declaration():
        found.unchecked.append(
            PresetValidationError(
                f"upstream {upstream.name!r}: the snapshot in {lock.name if lock else '?'} is "
                "older than this declaration (it was taken of another command, url, env, "
                f"strip_prefix or roots); run {command or 'presets upstreams snapshot'} again",
                source=source,
                line=line,
            )
        )
        return
    found.snapshots[upstream.name] = snapshot
    adapters, problems = adapters_for(upstream, snapshot.tools)
    found.problems.extend(PresetValidationError(p, source=source, line=line) for p in problems)
    kept = {a.id for a in adapters}
    found.adapters.extend(adapters)
    for tool in snapshot.tools:
        tool_id = upstream.tool_id(tool.name)
        if tool_id in kept:
            found.tools[tool_id] = tool


def name_clash(upstream: Upstream, taken: Iterable[tuple[str, str]], prefix: str) -> str | None:
    """Why ``upstream``'s tools could be named as a plugin's tool is, or None.

    ``taken`` holds ``(final MCP name, plugin)`` of the plugins' tools. An
    upstream ``app`` would serve its ``run_bash`` as ``space_app_run_bash``,
    the sandboxed shell's name, and one named ``app_run`` its ``bash`` so
    too: an upstream whose names would start as a plugin's tool's name does
    is refused, whatever tools it lists today.
    """
    stem = f"{prefix}{default_name(upstream.name)}_"
    for name, plugin in taken:
        if name.startswith(stem):
            return (
                f"upstream {upstream.name!r}: its tools would be named {stem}*, as plugin "
                f"{plugin}'s tool {name!r} is; rename the upstream (the first part of its "
                "tool ids) so that no tool of its can take a plugin's tool's name"
            )
    return None


def check_upstream_tool_ids(found: UpstreamSet, preset: Preset) -> list[tuple[str, int]]:
    """``(message, index in tool_ids)`` for each upstream tool id ``preset`` gets wrong.

    An id of a known upstream that its snapshot does not list, and a risk
    lower than a listed tool declares. What ``presets validate PATH`` checks
    of upstream tools with no plugin around; the whole catalog checks the
    ids through its adapters and only the risk here.
    """
    from agent_presets.lib.suggest import did_you_mean

    found_problems: list[tuple[str, int]] = []
    for index, tool_id in enumerate(preset.tool_ids):
        upstream = found.owner(tool_id)
        if upstream is None or upstream.name not in found.snapshots:
            continue
        if tool_id not in found.tools:
            known = [t for t in found.tools if found.owner(t) is upstream]
            found_problems.append(
                (
                    f"upstream {upstream.name!r} lists no tool {tool_id!r} in its snapshot"
                    + did_you_mean(tool_id, known, "`presets tools` lists the tools it has"),
                    index,
                )
            )
            continue
        risk = found.risk_problem(preset, tool_id)
        if risk is not None:
            found_problems.append((risk, index))
    return found_problems


def tool_ids_of(upstream: Upstream, tools: Sequence[UpstreamTool]) -> list[str]:
    """The tool ids an upstream's tools get, in its order."""
    return [upstream.tool_id(t.name) for t in tools]


def offline_call_error(upstream: str) -> ToolCallError:
    """What a call of an upstream tool says when nothing forwards it (no server runs)."""
    return ToolCallError(
        f"upstream {upstream!r} is not running here: its tools are forwarded by `presets serve`"
    )
