"""Prompts, resources and completions: what the active presets bundle beside their tools.

``ServedMembers`` answers ``prompts/list``, ``prompts/get``,
``resources/list``, ``resources/templates/list``, ``resources/read`` and
``completion/complete`` for one ``PresetServer``, in both protocol eras. It
serves the server's own prompt (``active-presets``) and resources
(``presets://active/prompt``, ``presets://active/status``) and, beside them,
the members (``agent_presets.lib.bundles``) that the active presets list.

The gates are the tools': a session narrowed by ``--allow`` or by its
token's profile sees the members of the active presets it can see (those
with a tool it may call, or, for a preset of prompts and resources only,
one that every allow-list in force names). A member that is not served now
answers, like a tool, which preset provides it and what would turn it on.

A plugin's provider runs as a read of every runtime through the server's
``ToolCalls``, so it never sees half of a tool's write; declared contents
need no provider at all. Nothing here runs until a client asks. A prompt's
provider may ask the person or the client's model first, on a 2026-07-28
connection, in rounds as a tool does (``get_prompt``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from agent_presets.lib.model import ToolDef
from agent_presets.lib.suggest import did_you_mean
from agent_presets.server.mcp.auth import token_of
from agent_presets.server.mcp.context import McpCallContext
from agent_presets.server.mcp.rounds import InputRequired, MissingCapability
from agent_presets.server.mcp.wire import (
    PROMPT_NAME,
    PROMPT_URI,
    STATUS_URI,
    prompt_entry,
    prompt_text,
)
from agent_presets.server.start.lists import Listing, completes

if TYPE_CHECKING:
    from agent_presets.lib.boot import Presets
    from agent_presets.lib.bundles import Members
    from agent_presets.server.mcp.calls import ToolCalls

Handler = Callable[[ServerRequestContext[Any], Any], Any]
Status = Callable[[str | None], dict[str, Any]]
"""The status resource of a session of the token (``PresetServer.status``)."""
Lister = Callable[[], Listing]
"""What the server lists now, under the policy it has now (``PresetServer.listing``)."""


def _invalid(message: str, **data: Any) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message, data=data or None)


class ServedMembers:
    """The prompt, resource and completion handlers of one server.

    Given what they read, and nothing else of the server: its presets, its
    thread pool (``calls``, a provider runs as a read of every runtime), what
    it lists to a session (``lister``) and its status resource (``status``).
    """

    def __init__(self, presets: Presets, calls: ToolCalls, lister: Lister, status: Status) -> None:
        self.presets = presets
        self.calls = calls
        self.lister = lister
        self.status = status

    @property
    def members(self) -> Members:
        """The catalog's members; made empty on first use for a server that has none.

        A tools-only server so imports ``agent_presets.lib.bundles`` only when a
        client asks for a prompt or resource that is not the server's own.
        """
        if self.presets.members is None:
            from agent_presets.lib.bundles import Members

            self.presets.members = Members(
                namespace_prefix=self.presets.tool_registry.namespace_prefix
            )
        return self.presets.members

    def register(self, add: Callable[[str, Any, Handler], None]) -> None:
        """Register the handlers with ``add(method, params type, handler)``.

        ``completion/complete`` only when some member can be completed: the
        capability is advertised from the handlers there are.
        """
        add("prompts/list", types.PaginatedRequestParams, self.list_prompts)
        add("prompts/get", types.GetPromptRequestParams, self.get_prompt)
        add("resources/list", types.PaginatedRequestParams, self.list_resources)
        add("resources/read", types.ReadResourceRequestParams, self.read_resource)
        add("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        if completes(self.presets.members):
            add("completion/complete", types.CompleteRequestParams, self.complete)

    # -- what a session sees -------------------------------------------------

    def visible(self, token: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The prompt ids and resource ids this session is served now (``Listing.visible``)."""
        return self.lister().visible(token)

    def _not_served(self, kind: str, label: str, member_id: str, token: str | None) -> MCPError:
        """Why the member is not served to this session now, and what would serve it."""
        from agent_presets.lib.explain import explain_member  # only on this rare path

        field = "prompts" if kind == "prompt" else "resources"
        verdicts = explain_member(self.presets.manager, field, member_id)
        active = [v for v in verdicts if v.active]
        if active:
            return _invalid(
                f"{kind.capitalize()} {label} is not available to this session: its preset "
                f"{active[0].preset!r} is outside the allow-list this session is limited to. "
                "Only the user can change that."
            )
        if not verdicts:
            return _invalid(f"{kind.capitalize()} {label} exists but no preset lists it.")
        parts = [
            f"preset {v.preset!r}, which is inactive because {v.reason}. To enable it: {v.enable}"
            for v in verdicts
        ]
        return _invalid(
            f"{kind.capitalize()} {label} is not available now. It is provided by "
            + " Or by ".join(parts)
            + ". Only the user can set an override."
        )

    async def _run(self, member_id: str, work: Callable[[], Any]) -> Any:
        """Run ``work`` (it may call a plugin's provider) as a read of every runtime.

        Through the server's ``ToolCalls``: it waits for the tool calls that
        write before it and runs beside reads, on the loop when it is quick.
        """
        reader = ToolDef(
            name=f"member:{member_id}",
            description="",
            input_schema={},
            run=lambda _arguments: work(),
            preset="members",
            risk=None,
            runtime=None,
        )
        from agent_presets.lib.bundles import ContentError

        try:
            return await self.calls.run(reader, {})
        except ContentError as exc:
            if exc.invalid_params:
                raise _invalid(str(exc)) from None
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None

    # -- prompts -------------------------------------------------------------

    async def list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return {
            "prompts": self.lister().prompts(token_of(ctx.request)),
            "resultType": "complete",
        }

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> dict[str, Any]:
        token = token_of(ctx.request)
        if params.name == PROMPT_NAME:
            fragments = self.lister().fragments(token)
            return {
                "description": prompt_entry(fragments)["description"],
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": prompt_text(fragments)}}
                ],
                "resultType": "complete",
            }
        prompt_id = self.members.prompt_id(params.name)
        if prompt_id is None:
            known = [PROMPT_NAME, *(self.members.prompt_name(p) for p in self.members.prompts)]
            hint = did_you_mean(params.name, known, "list the prompts to see what is served now.")
            raise _invalid(f"Unknown prompt {params.name!r}: no installed plugin declares it{hint}")
        if prompt_id not in self.visible(token)[0]:
            raise self._not_served("prompt", repr(params.name), prompt_id, token)
        spec = self.members.prompts[prompt_id]
        arguments = dict(params.arguments or {})
        name_of = self.presets.tool_adapters.mcp_name_of
        context = self._asking(ctx, params) if self.members.asks(prompt_id) else None
        try:
            messages = await self._run(
                prompt_id,
                lambda: self.members.render(prompt_id, arguments, self._app(), name_of, context),
            )
        except InputRequired as asked:  # the client answers, then gets the prompt again
            return asked.result()
        except MissingCapability as missing:  # as a tool's question: refused, as the spec says
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=str(missing),
                data={"requiredCapabilities": missing.required},
            ) from None
        finally:
            if context is not None:
                await context.flush()
        return {"description": spec.description, "messages": messages, "resultType": "complete"}

    def _asking(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> McpCallContext | None:
        """The context a provider asks through: on a 2026-07-28 connection only.

        There a question ends the round (an ``input_required`` result, its
        state sealed by ``rounds.state_boundary`` and bound to this prompt,
        its arguments and the caller), and the client's retry renders again
        with the answer. A legacy connection could only ask by waiting, and a
        provider runs as a read of every runtime: a person slow to answer
        would hold every tool that writes. There the provider gets None and
        renders without asking, as before providers could ask.
        """
        context = McpCallContext(ctx, params.name, params, doing="get this prompt")
        return context if context.modern else None

    def _app(self) -> Any:
        return self.presets.manager.app

    # -- resources -----------------------------------------------------------

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        entries = self.lister().resources(token_of(ctx.request))
        return {"resources": entries, "resultType": "complete"}

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        entries = self.lister().resources(token_of(ctx.request), templates=True)
        return {"resourceTemplates": entries, "resultType": "complete"}

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> dict[str, Any]:
        uri = str(params.uri)
        token = token_of(ctx.request)
        if uri in (PROMPT_URI, STATUS_URI):
            if uri == PROMPT_URI:
                text, mime = prompt_text(self.lister().fragments(token)), "text/markdown"
            else:
                text = json.dumps(self.status(token), indent=1, default=str)
                mime = "application/json"
            return {
                "contents": [{"uri": uri, "mimeType": mime, "text": text}],
                "resultType": "complete",
            }
        _, resource_ids = self.visible(token)
        # The served templates first (in order), then any other, to say who provides it.
        found = self.members.resource_for(uri, resource_ids) or self.members.resource_for(uri)
        if found is None:
            served = [PROMPT_URI, STATUS_URI]
            raise _invalid(
                f"Unknown resource {uri!r}: no served resource or template matches it; "
                f"list the resources (and resource templates) to see what is served now "
                f"(always: {', '.join(served)})",
                uri=uri,  # SEP-2164: a resource not found names its URI
            )
        spec, variables = found
        if spec.id not in resource_ids:
            raise self._not_served(spec.kind, repr(uri), spec.id, token)
        contents = await self._run(
            spec.id, lambda: self.members.read(spec, uri, variables, self._app())
        )
        return {"contents": contents, "resultType": "complete"}

    # -- completions -----------------------------------------------------------

    async def complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> dict[str, Any]:
        token = token_of(ctx.request)
        ref = params.ref
        argument = params.argument
        prompt_ids, resource_ids = self.visible(token)
        if isinstance(ref, types.PromptReference):
            member_id = self.members.prompt_id(ref.name)
            if member_id is None:
                # The server's own prompt takes no arguments: nothing to complete.
                if ref.name == PROMPT_NAME:
                    return _completion([])
                raise _invalid(f"Unknown prompt {ref.name!r}: list the prompts to see their names")
            if member_id not in prompt_ids:
                raise self._not_served("prompt", repr(ref.name), member_id, token)
            spec = self.members.prompts[member_id]
            if spec.argument(argument.name) is None:
                takes = ", ".join(a.name for a in spec.arguments) or "no arguments"
                raise _invalid(
                    f"prompt {ref.name!r} has no argument {argument.name!r}; it takes: {takes}"
                )
        else:
            template = next(
                (r for r in self.members.resources.values() if ref.uri in (r.uri_template, r.uri)),
                None,
            )
            if template is None:
                if ref.uri in (PROMPT_URI, STATUS_URI):
                    return _completion([])
                raise _invalid(
                    f"Unknown resource template {ref.uri!r}: list the resource templates to "
                    "see their URI templates"
                )
            if template.id not in resource_ids:
                raise self._not_served(template.kind, repr(ref.uri), template.id, token)
            if template.uri_template is None or argument.name not in template.template.variables:
                raise _invalid(
                    f"{template.kind} {ref.uri!r} has no variable {argument.name!r}"
                    + (
                        f"; its variables: {', '.join(template.template.variables)}"
                        if template.uri_template is not None
                        else ""
                    )
                )
            member_id = template.id
        context = dict(params.context.arguments or {}) if params.context else {}
        values = await self._run(
            member_id,
            lambda: self.members.complete(
                member_id, argument.name, argument.value, context, self._app()
            ),
        )
        return _completion(values)


def _completion(values: list[str]) -> dict[str, Any]:
    from agent_presets.lib.bundles import MAX_COMPLETIONS

    shown = values[:MAX_COMPLETIONS]
    return {
        "completion": {
            "values": shown,
            "total": len(values),
            "hasMore": len(values) > len(shown),
        },
        "resultType": "complete",
    }
