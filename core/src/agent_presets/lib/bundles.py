"""Prompts, resources and resource templates: what presets bundle beside their tools.

A preset file declares them next to its presets (``prompts:``, ``resources:``,
``resource_templates:``) and a preset lists them by id (``prompts:``,
``resources:``) as it lists tool ids; they are served only while a preset
that lists them is active. What YAML can say, it says: a prompt's messages
with ``{{argument}}`` placeholders (and ``{{tool.id}}`` for a tool's MCP
name), a resource's text or bytes, a template's text with ``{{variable}}``
placeholders for its URI's variables. What only code can say (contents
computed when read, messages built from the app's state, completions of
argument values) a plugin gives through the ``presets_content_providers``
hook: a ``ContentProvider`` with the id of the member it serves.

Everything here is library code: ``presets validate`` checks members with
it, and the server (``agent_presets.server.mcp.catalog``) serves them through
``Members``; nothing imports ``mcp``. Members cost nothing until asked for:
a template is parsed when first matched, a provider is called when read.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import FrameType, MappingProxyType
from typing import Any, Final, Literal

from agent_presets.lib.callcontext import CallContext, takes_context
from agent_presets.lib.model import PresetError, PresetValidationError
from agent_presets.lib.uritemplate import UriTemplate
from agent_presets.results import Content

MEMBER_PLACEHOLDER_RE: Final = re.compile(r"\{\{\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*\}\}")
"""``{{name}}`` in a member's text: an argument or variable, or (dotted) a tool id."""

MAX_COMPLETIONS: Final = 100
"""Values one ``completion/complete`` answer holds (the protocol's limit)."""

Role = Literal["user", "assistant"]
Kind = Literal["prompt", "resource", "resource template"]


class ContentError(PresetError):
    """A prompt or resource cannot be served as asked: the message says why and what to do.

    ``invalid_params`` marks a problem with what the client sent (an argument
    missing or unknown); otherwise a plugin's provider failed.
    """

    def __init__(self, message: str, *, invalid_params: bool = True) -> None:
        super().__init__(message)
        self.invalid_params = invalid_params


# ---------------------------------------------------------------- declarations


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False
    values: tuple[str, ...] = ()
    """Values offered as completions, when no provider completes the argument."""


@dataclass(frozen=True)
class PromptSpec:
    """A declared prompt. ``messages`` is None when a provider renders them."""

    id: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()
    messages: tuple[Mapping[str, Any], ...] | None = None
    name: str | None = None
    title: str | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def kind(self) -> Kind:
        return "prompt"

    def argument(self, name: str) -> PromptArgument | None:
        return next((a for a in self.arguments if a.name == name), None)


@dataclass(frozen=True)
class ResourceSpec:
    """A declared resource (``uri``) or resource template (``uri_template``).

    With neither ``text`` nor ``blob`` (base64) a provider reads it.
    """

    id: str
    uri: str | None = None
    uri_template: str | None = None
    name: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def kind(self) -> Kind:
        return "resource" if self.uri is not None else "resource template"

    @property
    def static(self) -> bool:
        """Whether its contents are in the declaration (no provider reads it)."""
        return self.text is not None or self.blob is not None

    @cached_property
    def template(self) -> UriTemplate:
        """The parsed URI template (the loader has checked that it parses)."""
        assert self.uri_template is not None, "a resource of one URI has no template"
        return UriTemplate.parse(self.uri_template)


Member = PromptSpec | ResourceSpec


def member_location(member: Member) -> dict[str, Any]:
    """``source=`` and ``line=`` of a member's declaration, for a problem about it."""
    return {"source": member.source, "line": member.line}


# ---------------------------------------------------------------- providers

ReadResult = str | bytes | Content | Sequence[Content]
Message = Content | tuple[Role, Content]


@dataclass(frozen=True)
class ContentProvider:
    """What code supplies for one declared prompt or resource (matched by ``id``).

    - ``read(app, variables)``: a resource's contents when a client reads it:
      text (``str``), bytes, or ``results.resource`` blocks (for several
      contents). ``variables`` holds a template's values (empty for a
      resource of one URI).
    - ``render(app, arguments)``: a prompt's messages, for a prompt declared
      without ``messages``: ``results`` blocks (said by the user) or
      ``(role, block)`` pairs. A ``render`` of three parameters gets a
      ``CallContext`` as the third, to ask the person (``elicit``) or the
      client's model before it renders; it gets None where the server cannot
      ask in rounds (see ``Members.render``).
    - ``complete(app, argument, value, arguments)``: values for a prompt
      argument or template variable that start like ``value``;
      ``arguments`` holds the others the client has already filled.

    Each callable fetches what it needs from ``app`` when called, never
    when the provider is made. ``defined_at`` (``(file, line)``) is where it
    was made, for problems about it; it is found when not given.
    """

    id: str
    read: Callable[[Any, Mapping[str, str]], ReadResult] | None = None
    render: Callable[..., Iterable[Message]] | None = None
    complete: Callable[[Any, str, str, Mapping[str, str]], Iterable[str]] | None = None
    source: str | None = None
    defined_at: tuple[str, int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise PresetValidationError(
                f"ContentProvider id must be the id of a declared prompt or resource, "
                f"not {self.id!r}"
            )
        for name in ("read", "render", "complete"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise PresetValidationError(
                    f"ContentProvider {self.id!r}: {name} must be callable, "
                    f"not {type(value).__name__}"
                )
        if self.read is None and self.render is None and self.complete is None:
            raise PresetValidationError(
                f"ContentProvider {self.id!r} gives none of read, render or complete; give one"
            )
        if self.defined_at is None:
            object.__setattr__(self, "defined_at", _caller())

    @property
    def asks(self) -> bool:
        """Whether its ``render`` takes the call context (a third parameter)."""
        return self.render is not None and takes_context(self.render)


def _caller() -> tuple[str, int] | None:
    """``(file, line)`` of the code outside this module that is making a provider."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in (__file__, "<string>"):
        frame = frame.f_back
    # Past the dataclass's generated __init__ (file "<string>"), to the plugin's line.
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


# ---------------------------------------------------------------- reading a file

At = Callable[[tuple[str | int, ...], str], PresetValidationError]
"""The loader's ``at(path, message)``: a problem located at a path of the file."""


@dataclass
class FileMembers:
    """The members one preset file declares, and the problems only the file shows."""

    prompts: list[PromptSpec] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=list)
    problems: list[PresetValidationError] = field(default_factory=list)


def read_members(
    data: Mapping[str, Any],
    source: str,
    bad: set[tuple[str, int]],
    at: At,
    line_of: Callable[[tuple[str | int, ...]], int | None],
) -> FileMembers:
    """The valid members of a file the schema has checked (``bad``: the items it refused).

    Then the rules the schema cannot state: a placeholder that names neither
    an argument (or variable) nor a tool id, a URI template that does not
    parse, an id declared twice in the file, bytes that are not base64.
    """
    found = FileMembers()
    seen: dict[str, tuple[str | int, ...]] = {}

    def first_time(member_id: str, path: tuple[str | int, ...]) -> bool:
        # One id space for prompts and resources: a content provider names its member by id.
        if member_id in seen:
            first = line_of(seen[member_id])
            found.problems.append(
                at(
                    (*path, "id"),
                    f"{_KINDS[str(path[0])]} {member_id!r} is declared twice in this file"
                    + (f" (first at line {first})" if first else "")
                    + "; an id names one prompt or resource: rename one",
                )
            )
            return False
        seen[member_id] = path
        return True

    for index, item in enumerate(_list(data, "prompts")):
        path: tuple[str | int, ...] = ("prompts", index)
        if ("prompts", index) in bad or not first_time(item["id"], path):
            continue
        problems = _prompt_problems(item, path, at)
        if problems:
            found.problems.extend(problems)
            continue
        found.prompts.append(_prompt(item, source, line_of(path)))
    for key in ("resources", "resource_templates"):
        for index, item in enumerate(_list(data, key)):
            path = (key, index)
            if (key, index) in bad or not first_time(item["id"], path):
                continue
            problems = _resource_problems(item, path, at)
            if problems:
                found.problems.extend(problems)
                continue
            found.resources.append(_resource(item, source, line_of(path)))
    return found


_KINDS: Final = {
    "prompts": "prompt",
    "resources": "resource",
    "resource_templates": "resource template",
}


def _list(data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _prompt_problems(
    item: Mapping[str, Any], path: tuple[str | int, ...], at: At
) -> list[PresetValidationError]:
    label = f"prompt {item['id']!r}"
    names = [a["name"] for a in item.get("arguments", ())]
    problems = []
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            problems.append(
                at(
                    (*path, "arguments", index, "name"),
                    f"{label}: argument {name!r} is declared twice; keep one",
                )
            )
        seen.add(name)
    for index, message in enumerate(item.get("messages", ())):
        where = (*path, "messages", index)
        for key, text in _message_texts(message):
            unknown = [p for p in member_placeholders(text) if "." not in p and p not in seen]
            for name in unknown:
                offer = ", ".join(names) if names else "none"
                problems.append(
                    at(
                        (*where, *key),
                        f"{label}: the placeholder {{{{{name}}}}} names no argument of the "
                        f"prompt (its arguments: {offer}); declare it under arguments: or fix "
                        "the name",
                    )
                )
        for key, data in _message_blobs(message):
            if not _is_base64(data):
                problems.append(
                    at((*where, *key), f"{label}: the data is not valid base64; encode the bytes")
                )
    return problems


def _message_texts(message: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    texts: list[tuple[tuple[str, ...], str]] = []
    if "text" in message:
        texts.append((("text",), message["text"]))
    resource = message.get("resource")
    if isinstance(resource, Mapping):
        texts.append((("resource", "uri"), resource["uri"]))
        if "text" in resource:
            texts.append((("resource", "text"), resource["text"]))
    return texts


def _message_blobs(message: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    blobs: list[tuple[tuple[str, ...], str]] = []
    image = message.get("image")
    if isinstance(image, Mapping):
        blobs.append((("image", "data"), image["data"]))
    resource = message.get("resource")
    if isinstance(resource, Mapping) and "blob" in resource:
        blobs.append((("resource", "blob"), resource["blob"]))
    return blobs


def _resource_problems(
    item: Mapping[str, Any], path: tuple[str | int, ...], at: At
) -> list[PresetValidationError]:
    problems = []
    if "uri_template" in item:
        label = f"resource template {item['id']!r}"
        try:
            variables: Sequence[str] = UriTemplate.parse(item["uri_template"]).variables
        except ValueError as exc:
            problems.append(
                at((*path, "uri_template"), f"{label}: the URI template does not parse: {exc}")
            )
            variables = ()
        else:
            for name in member_placeholders(item.get("text", "")):
                if "." not in name and name not in variables:
                    problems.append(
                        at(
                            (*path, "text"),
                            f"{label}: the placeholder {{{{{name}}}}} names no variable of the "
                            f"URI template (its variables: {', '.join(variables)}); fix the name",
                        )
                    )
    elif "blob" in item and not _is_base64(item["blob"]):
        problems.append(
            at(
                (*path, "blob"),
                f"resource {item['id']!r}: the blob is not valid base64; encode the bytes",
            )
        )
    return problems


def member_placeholders(text: str) -> list[str]:
    """The names ``{{...}}`` placeholders in ``text`` give, in order of first appearance."""
    if "{{" not in text:
        return []
    return list(dict.fromkeys(MEMBER_PLACEHOLDER_RE.findall(text)))


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _prompt(item: Mapping[str, Any], source: str, line: int | None) -> PromptSpec:
    messages = item.get("messages")
    return PromptSpec(
        id=item["id"],
        description=item["description"],
        arguments=tuple(
            PromptArgument(
                a["name"],
                a.get("description"),
                bool(a.get("required", False)),
                tuple(a.get("values", ())),
            )
            for a in item.get("arguments", ())
        ),
        messages=None if messages is None else tuple(_frozen(m) for m in messages),
        name=item.get("name"),
        title=item.get("title"),
        source=source,
        line=line,
    )


def _resource(item: Mapping[str, Any], source: str, line: int | None) -> ResourceSpec:
    blob = item.get("blob")
    return ResourceSpec(
        id=item["id"],
        uri=item.get("uri"),
        uri_template=item.get("uri_template"),
        name=item.get("name"),
        title=item.get("title"),
        description=item.get("description"),
        mime_type=item.get("mime_type"),
        text=item.get("text"),
        blob=None if blob is None else "".join(blob.split()),
        source=source,
        line=line,
    )


# ---------------------------------------------------------------- serving


def prompt_mcp_name(spec: PromptSpec, namespace_prefix: str | None) -> str:
    """The name clients see: ``name`` (or the id with ``.`` and ``-`` as ``_``), prefixed."""
    base = spec.name if spec.name is not None else re.sub(r"[.-]", "_", spec.id)
    return f"{namespace_prefix or ''}{base}"


@dataclass
class Members:
    """The valid prompts, resources and providers of a catalog, ready to serve by id.

    Made by ``bootstrap`` from what ``catalog.collect`` accepted; the server
    asks it for what the active presets list. Lookups by MCP name and by URI
    are built on first use, so a server no client asks for prompts or
    resources never builds them.
    """

    prompts: dict[str, PromptSpec] = field(default_factory=dict)
    resources: dict[str, ResourceSpec] = field(default_factory=dict)
    providers: dict[str, ContentProvider] = field(default_factory=dict)
    namespace_prefix: str | None = None

    def __bool__(self) -> bool:
        return bool(self.prompts or self.resources)

    @cached_property
    def _prompt_names(self) -> dict[str, str]:
        return {prompt_mcp_name(p, self.namespace_prefix): p.id for p in self.prompts.values()}

    @cached_property
    def _uris(self) -> dict[str, str]:
        return {r.uri: r.id for r in self.resources.values() if r.uri is not None}

    def prompt_name(self, prompt_id: str) -> str:
        return prompt_mcp_name(self.prompts[prompt_id], self.namespace_prefix)

    def prompt_id(self, name: str) -> str | None:
        """The id of the prompt clients call ``name``, or None."""
        return self._prompt_names.get(name)

    def asks(self, prompt_id: str) -> bool:
        """Whether the prompt's provider may ask the person (its ``render`` takes a context)."""
        provider = self.providers.get(prompt_id)
        return provider is not None and self.prompts[prompt_id].messages is None and provider.asks

    def resource_for(
        self, uri: str, among: Iterable[str] | None = None
    ) -> tuple[ResourceSpec, dict[str, str]] | None:
        """The resource ``uri`` names and its template's values: its own URI first, then templates.

        ``among`` limits the templates tried (the active ones, in order); a
        resource of one URI is found wherever it is, so the caller can say
        which preset provides it.
        """
        resource_id = self._uris.get(uri)
        if resource_id is not None:
            return self.resources[resource_id], {}
        ids = self.resources if among is None else among
        for resource_id in ids:
            spec = self.resources.get(resource_id)
            if spec is None or spec.uri_template is None:
                continue
            values = spec.template.match(uri)
            if values is not None:
                return spec, values
        return None

    # -- prompts -----------------------------------------------------------

    def render(
        self,
        prompt_id: str,
        arguments: Mapping[str, str] | None,
        app: Any,
        tool_name: Callable[[str], str | None],
        context: CallContext | None = None,
    ) -> list[dict[str, Any]]:
        """The prompt's messages in wire form; ``ContentError`` for arguments it cannot take.

        ``context`` reaches a provider whose ``render`` takes one (``asks``):
        the server gives it on a 2026-07-28 connection, where a question ends
        the round and the client's retry renders again with the answer. It
        is None elsewhere (a legacy connection, a render outside a server),
        and the provider renders without asking.
        """
        spec = self.prompts[prompt_id]
        given = dict(arguments or {})
        name = prompt_mcp_name(spec, self.namespace_prefix)
        unknown = [k for k in given if spec.argument(k) is None]
        if unknown:
            takes = ", ".join(a.name for a in spec.arguments) or "no arguments"
            raise ContentError(f"prompt {name!r} has no argument {unknown[0]!r}; it takes: {takes}")
        missing = [a.name for a in spec.arguments if a.required and not given.get(a.name)]
        if missing:
            raise ContentError(
                f"prompt {name!r} needs the argument(s) {', '.join(map(repr, missing))}; "
                "give them under arguments"
            )
        if spec.messages is None:
            provider = self.providers[prompt_id]
            assert provider.render is not None  # the catalog refused a prompt without either
            args: tuple[Any, ...] = (app, given, context) if provider.asks else (app, given)
            made = _call(provider, "render", provider.render, *args)
            return [_message(item, name) for item in made]

        def fill(text: str) -> str:
            return _fill(text, given, tool_name)

        return [_declared_message(m, fill) for m in spec.messages]

    # -- resources ---------------------------------------------------------

    def read(
        self, spec: ResourceSpec, uri: str, variables: Mapping[str, str], app: Any
    ) -> list[dict[str, Any]]:
        """The contents of ``uri`` (named by ``spec``) in wire form."""
        if spec.text is not None:
            text = spec.text if spec.uri is not None else _fill(spec.text, variables, _no_tool)
            return [_contents(uri, spec, text=text)]
        if spec.blob is not None:
            return [_contents(uri, spec, blob=spec.blob)]
        provider = self.providers[spec.id]
        assert provider.read is not None  # the catalog refused a resource without either
        value = _call(provider, "read", provider.read, app, dict(variables))
        if isinstance(value, str):
            return [_contents(uri, spec, text=value)]
        if isinstance(value, bytes | bytearray):
            return [_contents(uri, spec, blob=base64.b64encode(value).decode("ascii"))]
        blocks = [value] if isinstance(value, Content) else list(value)
        out = []
        for block in blocks:
            wire = block.wire if isinstance(block, Content) else None
            if wire is None or wire.get("type") != "resource":
                raise ContentError(
                    f"the content provider of {spec.id!r} returned {type(block).__name__}; "
                    "return text, bytes or results.resource blocks (a plugin bug: report it)",
                    invalid_params=False,
                )
            out.append(_plain(wire["resource"]))
        return out

    # -- completions ---------------------------------------------------------

    def complete(
        self,
        member_id: str,
        argument: str,
        value: str,
        context: Mapping[str, str] | None,
        app: Any,
    ) -> list[str]:
        """Values for ``argument`` of a prompt or template that start like ``value``."""
        provider = self.providers.get(member_id)
        if provider is not None and provider.complete is not None:
            made = _call(
                provider, "complete", provider.complete, app, argument, value, dict(context or {})
            )
            values = [str(v) for v in made]
        else:
            spec = self.prompts.get(member_id)
            arg = spec.argument(argument) if spec is not None else None
            values = list(arg.values) if arg is not None else []
        folded = value.casefold()
        return [v for v in values if v.casefold().startswith(folded)]


def _no_tool(_tool_id: str) -> str | None:
    return None


def _fill(text: str, values: Mapping[str, str], tool_name: Callable[[str], str | None]) -> str:
    """``text`` with ``{{name}}`` as the value given, and ``{{tool.id}}`` as the tool's name.

    A placeholder with nothing to put there (an optional argument left out)
    becomes empty; a tool id nobody provides stays as written, as in system
    prompts (the catalog has reported it).
    """
    if "{{" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if "." in name:
            found = tool_name(name)
            return match.group(0) if found is None else found
        return values.get(name, "")

    return MEMBER_PLACEHOLDER_RE.sub(replace, text)


def _declared_message(message: Mapping[str, Any], fill: Callable[[str], str]) -> dict[str, Any]:
    content: dict[str, Any]
    if "text" in message:
        content = {"type": "text", "text": fill(message["text"])}
    elif "image" in message:
        image = message["image"]
        content = {
            "type": "image",
            "data": "".join(image["data"].split()),
            "mimeType": image["mime_type"],
        }
    else:
        resource = message["resource"]
        inner: dict[str, Any] = {"uri": fill(resource["uri"])}
        if "mime_type" in resource:
            inner["mimeType"] = resource["mime_type"]
        if "text" in resource:
            inner["text"] = fill(resource["text"])
        else:
            inner["blob"] = "".join(resource["blob"].split())
        content = {"type": "resource", "resource": inner}
    return {"role": message["role"], "content": content}


def _message(item: Any, prompt: str) -> dict[str, Any]:
    role: Any = "user"
    block = item
    if isinstance(item, tuple) and len(item) == 2:
        role, block = item
    if role not in ("user", "assistant") or not isinstance(block, Content):
        raise ContentError(
            f"the content provider of prompt {prompt!r} rendered {type(item).__name__}; "
            "render results blocks or (role, block) pairs (a plugin bug: report it)",
            invalid_params=False,
        )
    return {"role": role, "content": _plain(block.wire)}


def _contents(
    uri: str, spec: ResourceSpec, *, text: str | None = None, blob: str | None = None
) -> dict[str, Any]:
    mime = spec.mime_type or ("text/plain" if text is not None else "application/octet-stream")
    out: dict[str, Any] = {"uri": uri, "mimeType": mime}
    if text is not None:
        out["text"] = text
    else:
        out["blob"] = blob
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _call(provider: ContentProvider, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """Call a provider's function; what it raises becomes a ``ContentError`` naming it."""
    try:
        result = function(*args)
        if what != "read" and not isinstance(result, list | tuple):
            result = list(result)
        return result
    except ContentError:
        raise
    except PresetError as exc:
        # A ToolCallError and its kin are written for the model: pass the text on.
        raise ContentError(str(exc), invalid_params=False) from exc
    except Exception as exc:
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
        raise ContentError(
            f"the content provider of {provider.id!r} failed in {what}: "
            f"{type(exc).__name__}: {str(exc)[:200]}{where}",
            invalid_params=False,
        ) from exc
