"""What ``presets serve`` lists, built without the SDK: tools, prompts, resources, itself.

The MCP server (``agent_presets.server.mcp``) answers ``tools/list``,
``prompts/list`` and ``resources/list`` with what ``Listing`` builds, and
says who it is (name, instructions, capabilities) with what is here; the
start front (``front.py``) answers the same requests with the same
functions before the SDK has loaded. So the two cannot drift apart: only the
SDK's shaping of a result for the wire (``shape``) is written out here a
second time, and a test holds it to the SDK's, byte for byte, in both eras.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from agent_presets._version import __version__
from agent_presets.lib.boot import host_defaults
from agent_presets.lib.principal import LOCAL
from agent_presets.lib.toolwire import annotations_for, tool_entry

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.bundles import Members, PromptSpec, ResourceSpec
    from agent_presets.lib.model import PromptFragment, Resolution, ToolDef
    from agent_presets.server.policy import ToolPolicy
    from agent_presets.server.principals import Principals

SERVER_NAME: Final = "agent-presets"
SERVER_TITLE: Final = "agent-presets"
PROMPT_NAME: Final = "active-presets"
PROMPT_URI: Final = "presets://active/prompt"
STATUS_URI: Final = "presets://active/status"

INSTRUCTIONS: Final = (
    "The tools offered here follow the app's context. When your own call changes it, your "
    "tool list stays as it is and the call's result names the tools that became active: run "
    "them with the presets_call tool (risky ones with presets_call_risky). "
    f"The prompt {PROMPT_NAME!r} and the resource {PROMPT_URI} hold guidance for the tools "
    "active now. A tool that is not offered right now answers with what would turn it on."
)
"""The instructions of a server whose app supplies none (``HostDefaults.instructions``)."""

OWN_RESOURCES: Final = (
    {
        "uri": PROMPT_URI,
        "name": "active-presets-prompt",
        "title": "Guidance for the active tools",
        "description": "The prompt fragments of the presets active now.",
        "mimeType": "text/markdown",
    },
    {
        "uri": STATUS_URI,
        "name": "active-presets-status",
        "title": "Active presets",
        "description": "The context, overrides, active presets and tools, as JSON.",
        "mimeType": "application/json",
    },
)


def server_instructions(app: Any) -> str:
    """The server's ``instructions``: the app's own (its ``HostDefaults``), else ours."""
    defaults = host_defaults(app)
    own = None if defaults is None else defaults.instructions
    return own or INSTRUCTIONS


def completes(members: Members | None) -> bool:
    """Whether the server serves ``completion/complete``: some prompt or template to complete.

    The SDK advertises the ``completions`` capability from the handlers there are.
    """
    return members is not None and bool(
        members.prompts or any(r.uri_template is not None for r in members.resources.values())
    )


def prompt_text(fragments: Sequence[PromptFragment]) -> str:
    """The active prompt fragments as one markdown text."""
    if not fragments:
        return "No active preset has guidance right now."
    parts = ["Guidance for the tools that are active now:"]
    parts.extend(f"## {f.preset}\n\n{f.prompt.strip()}" for f in fragments)
    return "\n\n".join(parts) + "\n"


def prompt_entry(fragments: Sequence[PromptFragment]) -> dict[str, Any]:
    names = ", ".join(f.preset for f in fragments) or "none"
    return {
        "name": PROMPT_NAME,
        "title": "Guidance for the active tools",
        "description": f"How to use the tools active now (presets with guidance: {names}).",
    }


class Listing:
    """What one server lists to a session of ``token`` (None: no token), from its live state.

    The gates are the tools': a session narrowed by ``--allow`` or by its
    token's profile sees the tools it may call, the guidance and names of the
    active presets behind them, and the members of those presets (and of a
    preset of prompts and resources only, when every allow-list names it).
    """

    def __init__(
        self, presets: Presets, policy: ToolPolicy, principals: Principals | None = None
    ) -> None:
        """``principals``: each principal's own state; None: every one follows the server
        (so at the start of a server whose store is its own: nobody has set anything yet)."""
        self.presets = presets
        self.policy = policy
        self.principals = principals

    def resolution(self, token: str | None) -> Resolution:
        """What the principal of ``token`` (``local`` without one) is served now."""
        if self.principals is None:
            return self.presets.manager.resolve()
        return self.principals.resolution(LOCAL if token is None else token)

    def served_tools(self, token: str | None) -> list[ToolDef]:
        """The tools the principal of ``token`` is served now, the allow-lists not applied."""
        principal = LOCAL if token is None else token
        defs = None
        if principal != LOCAL and self.principals is not None:
            defs = self.principals.tool_defs(principal)
        return self.presets.tool_registry.list() if defs is None else self.tools_with(defs)

    def tools_with(self, defs: Sequence[ToolDef]) -> list[ToolDef]:
        """The registry's tools, its preset tools replaced by ``defs``, in name order."""
        managed = self.presets.sync.managed()
        tools = {t.name: t for t in self.presets.tool_registry.list() if t.name not in managed}
        tools.update((d.name, d) for d in defs)
        return [tools[name] for name in sorted(tools)]

    # -- tools -------------------------------------------------------------

    def tool_entries(self, tools: Iterable[ToolDef]) -> list[dict[str, Any]]:
        """The wire entries of ``tools`` that the allow-list leaves in."""
        allows = self.policy.allows
        return [tool_entry(t, annotations_for(t)) for t in tools if allows(t.name)]

    # -- what a session sees -----------------------------------------------

    def fragments(self, token: str | None) -> list[PromptFragment]:
        """The active presets' prompt fragments this session may read (``presets_seen``)."""
        fragments = list(self.resolution(token).prompt_fragments)
        if self.policy.allow is None and token is None:
            return fragments
        seen = self.presets_seen(token)
        return [f for f in fragments if f.preset in seen]

    def presets_seen(self, token: str | None) -> set[str]:
        """The active presets with at least one tool that the allow-lists show this session.

        A session narrowed by ``--allow`` or its token's profile reads the
        guidance, and sees the names, of those presets only: the others' tools
        are not its to call, and their prompts would describe them anyway.
        """
        ids = {
            tool.managed_source
            for tool in self.served_tools(token)
            if self.policy.allows(tool.name, token)
        }
        registry = self.presets.registry
        return {
            active.name
            for active in self.resolution(token).active_presets
            if (preset := registry.get(active.name)) is not None
            and ids.intersection(preset.tool_ids)
        }

    def open_presets(self, token: str | None) -> set[str] | None:
        """The active presets whose members this session may see; None: all of them."""
        if self.policy.allow is None and token is None:
            return None
        seen = self.presets_seen(token)
        registry = self.presets.registry
        for active in self.resolution(token).active_presets:
            preset = registry.get(active.name)
            if preset is not None and not preset.tool_ids and self.named(preset.name, token):
                seen.add(preset.name)
        return seen

    def named(self, preset: str, token: str | None) -> bool:
        """Whether every allow-list in force names ``preset`` (for presets without tools)."""
        policy = self.policy
        if policy.allow is not None and preset not in policy.allow.names:
            return False
        if token is None:
            return True
        profile = policy.profile(token)
        return profile is not None and (profile.allow is None or preset in profile.allow.names)

    def visible(self, token: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The prompt ids and resource ids this session is served now, in resolution order."""
        resolution = self.resolution(token)
        open_presets = self.open_presets(token)
        if open_presets is None:
            return resolution.prompt_ids, resolution.resource_ids
        prompts: dict[str, None] = {}
        resources: dict[str, None] = {}
        registry = self.presets.registry
        for name in resolution.active_names:
            preset = registry.get(name)
            if preset is None or name not in open_presets:
                continue
            prompts.update(dict.fromkeys(preset.prompts))
            resources.update(dict.fromkeys(preset.resources))
        return tuple(prompts), tuple(resources)

    # -- prompts and resources ---------------------------------------------

    def prompts(self, token: str | None) -> list[dict[str, Any]]:
        """The ``prompts/list`` entries: the server's own prompt, then the served members'."""
        entries = [prompt_entry(self.fragments(token))]
        prompt_ids, _ = self.visible(token)
        members = self.presets.members
        if members is not None:
            entries.extend(_prompt_entry(members, members.prompts[p]) for p in prompt_ids)
        return entries

    def resources(self, token: str | None, templates: bool = False) -> list[dict[str, Any]]:
        """The ``resources/list`` entries (the server's own first), or the templates'."""
        entries = [] if templates else [dict(e) for e in OWN_RESOURCES]
        members = self.presets.members
        if members is None:
            return entries
        key = "uriTemplate" if templates else "uri"
        for resource_id in self.visible(token)[1]:
            spec = members.resources[resource_id]
            if (spec.uri_template is not None) == templates:
                entries.append(_described(spec, {key: spec.uri_template or spec.uri}))
        return entries


def _prompt_entry(members: Members, spec: PromptSpec) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": members.prompt_name(spec.id), "description": spec.description}
    if spec.title is not None:
        entry["title"] = spec.title
    if spec.arguments:
        entry["arguments"] = [
            {"name": a.name, "required": a.required}
            | ({"description": a.description} if a.description else {})
            for a in spec.arguments
        ]
    return entry


def _described(spec: ResourceSpec, entry: dict[str, Any]) -> dict[str, Any]:
    entry["name"] = spec.name or spec.id
    if spec.title is not None:
        entry["title"] = spec.title
    if spec.description is not None:
        entry["description"] = spec.description
    if spec.mime_type is not None:
        entry["mimeType"] = spec.mime_type
    elif spec.text is not None:
        entry["mimeType"] = "text/plain"
    return entry


def server_info() -> dict[str, Any]:
    """The server's ``Implementation`` as the SDK sends it (fields in model order)."""
    return {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}


def capabilities(members: Members | None, modern: bool) -> dict[str, Any]:
    """The server's capabilities as the SDK derives them from its handlers (model order).

    ``PresetServer`` registers the same handlers whatever it serves, but
    ``completion/complete`` (``completes``); a 2026-07-28 client is also told of
    the tasks extension, which the 2025-11-25 model has no field for.
    """
    caps: dict[str, Any] = {}
    if completes(members):
        caps["completions"] = {}
    if modern:
        caps["extensions"] = {"io.modelcontextprotocol/tasks": {}}
    caps["logging"] = {}
    caps["prompts"] = {"listChanged": True}
    caps["resources"] = {"listChanged": True, "subscribe": True}
    caps["tools"] = {"listChanged": True}
    return caps


def shaped(entry: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    """``entry`` as an SDK model dumps it: its ``fields`` in the model's order, no None."""
    return {k: entry[k] for k in fields if entry.get(k) is not None}


PROMPT_FIELDS: Final = ("_meta", "arguments", "description", "icons", "name", "title")
ARGUMENT_FIELDS: Final = ("description", "name", "required", "title")
RESOURCE_FIELDS: Final = (
    "_meta",
    "annotations",
    "description",
    "icons",
    "mimeType",
    "name",
    "size",
    "title",
    "uri",
)
"""The fields of the SDK's ``Prompt``, ``PromptArgument`` and ``Resource`` models, in
model order (the same in both eras); a key not among them is dropped."""


def shaped_prompt(entry: Mapping[str, Any]) -> dict[str, Any]:
    prompt = shaped(entry, PROMPT_FIELDS)
    if "arguments" in prompt:
        prompt["arguments"] = [shaped(a, ARGUMENT_FIELDS) for a in prompt["arguments"]]
    return prompt
