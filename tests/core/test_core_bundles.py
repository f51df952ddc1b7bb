"""Prompts, resources and resource templates that presets bundle: loading, checks, serving.

The server's side (listing, reading, getting and completing over MCP, in
both eras) is tests/e2e/test_e2e_bundles.py; here is everything that works
without a server: what a file may declare, what ``presets validate`` reports
and where, the new hook, and what ``Members`` renders, reads and completes.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_presets import (
    ContentProvider,
    PresetValidationError,
    ToolAdapter,
    bootstrap,
    hookimpl,
    load_plugins,
    results,
)
from agent_presets.lib.bundles import ContentError, FileMembers
from agent_presets.lib.catalog import check_preset_files, collect
from agent_presets.lib.loader import parse_presets
from agent_presets.lib.plugins import display_path
from agent_presets.lib.tools import ToolRegistry
from agent_presets.lib.uritemplate import UriTemplate

HERE = Path(__file__).resolve()
PROVIDER_LINE = next(
    n for n, text in enumerate(HERE.read_text().splitlines(), 1) if text.endswith("# PROVIDER_LINE")
)

PRESET = """\
presets:
  - name: {name}-tools
    default_state: auto
    risk: normal
    contexts: [{{surface: any}}]
    tool_ids: [{name}.act]
    prompts: [{prompts}]
    resources: [{resources}]
"""


def tool(tool_id: str) -> ToolAdapter:
    return ToolAdapter(
        tool_id,
        description="Act.",
        input_schema={"type": "object"},
        handler=lambda app, args: "ok",
        name=tool_id.replace(".", "_"),
    )


class Plugin:
    """One YAML file (a preset of ``name``, its members below) and ``name.act``."""

    def __init__(
        self,
        name: str,
        folder: Path,
        members: str,
        *,
        prompts: str = "",
        resources: str = "",
        providers: list[ContentProvider] | None = None,
    ) -> None:
        self.__name__ = name
        self.name = name
        self.path = folder / f"{name}.yaml"
        preset = PRESET.format(name=name, prompts=prompts, resources=resources)
        if not prompts:
            preset = preset.replace("    prompts: []\n", "")
        if not resources:
            preset = preset.replace("    resources: []\n", "")
        self.path.write_text(preset + textwrap.dedent(members))
        self.providers = providers or []

    @hookimpl
    def presets_preset_files(self) -> list[Path]:
        return [self.path]

    @hookimpl
    def presets_tool_adapters(self) -> list[ToolAdapter]:
        return [tool(f"{self.name}.act")]

    @hookimpl
    def presets_content_providers(self) -> list[ContentProvider]:
        return self.providers


def problems(*plugins: Plugin) -> list[str]:
    plugin_set = load_plugins(list(plugins), strict=True)
    return [str(p) for p in collect(plugin_set, namespace_prefix="space_").problems]


def parse(text: str) -> tuple[FileMembers, list[str]]:
    members = FileMembers()
    _, found = parse_presets(textwrap.dedent(text), "f.yaml", members)
    return members, [str(p) for p in found]


# ---------------------------------------------------------------- the hook


def test_hook_presets_content_providers_reads_and_completes_a_declared_template(
    tmp_path: Path,
) -> None:
    class App:
        rooms = {"kitchen": "a stove", "hall": "a coat rack"}

    plugin = Plugin(
        "house",
        tmp_path,
        """\
        resource_templates:
          - id: house.room
            uri_template: house://room/{name}
            description: What a room holds.
        """,
        resources="house.room",
        providers=[
            ContentProvider(
                "house.room",
                read=lambda app, v: app.rooms[v["name"]],
                complete=lambda app, _argument, _value, _ctx: sorted(app.rooms),
            )
        ],
    )
    presets = bootstrap(App(), plugins=[plugin])
    assert presets.problems == []
    assert presets.manager.resolve().resource_ids == ("house.room",)
    members = presets.members
    spec, variables = members.resource_for("house://room/kitchen") or (None, {})
    assert spec is not None and variables == {"name": "kitchen"}
    assert members.read(spec, "house://room/kitchen", variables, App()) == [
        {"uri": "house://room/kitchen", "mimeType": "text/plain", "text": "a stove"}
    ]
    assert members.complete("house.room", "name", "K", {}, App()) == ["kitchen"]


def test_a_provider_records_where_it_was_made_and_refuses_nothing_to_do() -> None:
    provider = ContentProvider("x.y", read=lambda app, v: "")  # PROVIDER_LINE
    assert provider.defined_at == (str(HERE), PROVIDER_LINE)
    with pytest.raises(PresetValidationError, match="gives none of read, render or complete"):
        ContentProvider("x.y")
    with pytest.raises(PresetValidationError, match="read must be callable, not str"):
        ContentProvider("x.y", read="text")  # type: ignore[arg-type]


# ---------------------------------------------------------------- what a file says


def test_a_file_declares_prompts_resources_and_templates() -> None:
    members, found = parse(
        """\
        presets: []
        prompts:
          - id: notes.summary
            description: Summarize.
            arguments: [{name: style, required: true, values: [short, long]}]
            messages:
              - {role: user, text: "Summarize {{style}} with {{notes.read}}."}
        resources:
          - {id: notes.readme, uri: "notes://readme", text: Read me.}
          - {id: notes.logo, uri: "notes://logo.png", blob: "iVBORw0K\\nGgo=", mime_type: image/png}
        resource_templates:
          - {id: notes.page, uri_template: "notes://page/{n}", text: "Page {{n}}."}
        """
    )
    assert found == []
    assert [p.id for p in members.prompts] == ["notes.summary"]
    assert members.prompts[0].arguments[0].values == ("short", "long")
    assert [(r.id, r.kind) for r in members.resources] == [
        ("notes.readme", "resource"),
        ("notes.logo", "resource"),
        ("notes.page", "resource template"),
    ]
    assert members.resources[1].blob == "iVBORw0KGgo="  # line breaks in base64 are dropped


def test_validate_reports_placeholders_templates_and_ids_at_file_line_col() -> None:
    _, found = parse(
        """\
        presets: []
        prompts:
          - id: notes.summary
            description: Summarize.
            arguments: [{name: style}]
            messages:
              - {role: user, text: "Summarize {{stlye}}."}
          - id: notes.summary
            description: Again.
            messages: [{role: user, text: x}]
        resource_templates:
          - {id: notes.page, uri_template: "notes://page/{n}{m}"}
          - {id: notes.row, uri_template: "notes://row/{n}", text: "{{m}}"}
        resources:
          - {id: notes.bad, uri: "notes://bad", blob: "abc"}
        """
    )
    assert found == [
        "f.yaml:7:28: prompt 'notes.summary': the placeholder {{stlye}} names no argument of the "
        "prompt (its arguments: style); declare it under arguments: or fix the name",
        "f.yaml:8:9: prompt 'notes.summary' is declared twice in this file (first at line 3); "
        "an id names one prompt or resource: rename one",
        "f.yaml:12:36: resource template 'notes.page': the URI template does not parse: {m} at "
        "character 17 follows another variable with nothing between them, so a URI cannot say "
        "where one ends; put a literal such as '/' between them",
        "f.yaml:13:60: resource template 'notes.row': the placeholder {{m}} names no variable of "
        "the URI template (its variables: n); fix the name",
        "f.yaml:15:47: resource 'notes.bad': the blob is not valid base64; encode the bytes",
    ]


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (
            "prompts: [{id: a.b, description: d, messages: [{role: user}]}]",
            "a message has a role and exactly one of text, image or resource",
        ),
        (
            "resources: [{id: a.b, uri: 'a://b', text: t, blob: AA==}]",
            "gives both text and blob; keep one",
        ),
        ("resources: [{id: a.b, uri: nowhere}]", "'nowhere' is not a URI"),
        ("prompts: [{id: A, description: d}]", "id 'A' must be dotted"),
    ],
)
def test_the_schema_words_what_a_member_gets_wrong(member: str, message: str) -> None:
    _, found = parse("presets: []\n" + member + "\n")
    assert len(found) == 1 and message in found[0], found


def test_a_preset_of_prompts_only_is_valid_and_one_of_nothing_is_not() -> None:
    base = "  - {name: p, default_state: auto, risk: normal, contexts: [{surface: any}]"
    _, found = parse(f"presets:\n{base}, prompts: [a.b]}}\n")
    assert found == []
    _, found = parse(f"presets:\n{base}}}\n")
    assert found == [
        "f.yaml:2:5: preset 'p' lists no tool_ids, prompts or resources, so it would serve "
        "nothing; list at least one of them"
    ]


# ---------------------------------------------------------------- across plugins


def test_ids_prompt_names_and_uris_are_unique_across_plugins(tmp_path: Path) -> None:
    first = Plugin(
        "one",
        tmp_path,
        """\
        prompts: [{id: one.ask, name: ask, description: d, messages: [{role: user, text: x}]}]
        resources: [{id: one.doc, uri: "docs://readme", text: x}]
        """,
        prompts="one.ask",
        resources="one.doc",
    )
    second = Plugin(
        "two",
        tmp_path,
        """\
        prompts: [{id: two.ask, name: ask, description: d, messages: [{role: user, text: x}]}]
        resources: [{id: two.doc, uri: "docs://readme", text: x}]
        """,
        prompts="two.ask",
        resources="two.doc",
    )
    one = display_path(str(first.path))
    found = problems(first, second)
    assert any(
        p.endswith(
            f"prompt 'two.ask': the prompt name 'space_ask' is taken by prompt 'one.ask' "
            f"(declared at {one}:9); a client could not tell them apart: rename one"
        )
        for p in found
    ), found
    assert any("the URI 'docs://readme' is taken by resource 'one.doc'" in p for p in found)
    # The preset that lists a refused member is left out, naming it.
    assert any(
        "preset 'two-tools': no installed plugin declares the prompt 'two.ask'" in p for p in found
    )


def test_files_checked_alone_still_refuse_a_uri_declared_twice(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(
            f"presets: []\nresources: [{{id: {name}.doc, uri: 'docs://x', text: t}}]\n"
        )
    catalog = check_preset_files([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    assert [p.message for p in catalog.problems] == [
        f"resource 'b.doc': the URI 'docs://x' is taken by resource 'a.doc' (declared at "
        f"{catalog.files[0]}:2); a client could not tell them apart: rename one"
    ]


def test_providers_must_match_what_is_declared(tmp_path: Path) -> None:
    plugin = Plugin(
        "notes",
        tmp_path,
        """\
        prompts:
          - {id: notes.tour, description: A tour.}
          - {id: notes.fixed, description: d, messages: [{role: user, text: "{{notes.gone}}"}]}
        resources:
          - {id: notes.live, uri: "notes://live"}
          - {id: notes.still, uri: "notes://still", text: t}
        """,
        prompts="notes.tour",
        providers=[
            ContentProvider("notes.nothing", read=lambda app, v: ""),
            ContentProvider("notes.still", read=lambda app, v: ""),
        ],
    )
    found = problems(plugin)
    assert any(
        "content provider 'notes.nothing' of plugin notes serves no declared prompt or resource"
        in p
        for p in found
    ), found
    assert any("reads 'notes.still', which declares its contents" in p for p in found)
    assert any(
        "prompt 'notes.tour': declares no messages and no plugin renders it" in p for p in found
    )
    assert any(
        "resource 'notes.live': declares no text or blob and no plugin reads it" in p for p in found
    )
    assert any("{{notes.gone}} names a tool id no installed plugin provides" in p for p in found)
    assert any("preset 'notes-tools': no installed plugin declares the prompt" in p for p in found)


def test_a_provider_problem_is_located_where_the_provider_was_made(tmp_path: Path) -> None:
    plugin = Plugin("notes", tmp_path, "prompts: []\n", providers=[])
    plugin.providers = [ContentProvider("notes.none", read=lambda app, v: "")]  # PROVIDER_TWO
    line = next(
        n for n, t in enumerate(HERE.read_text().splitlines(), 1) if t.endswith("# PROVIDER_TWO")
    )
    found = collect(load_plugins([plugin], strict=True)).problems
    provider_problem = next(p for p in found if "notes.none" in p.message)
    assert (provider_problem.source, provider_problem.line) == (display_path(str(HERE)), line)


# ---------------------------------------------------------------- serving without a server


def members_of(tmp_path: Path, members: str, **kwargs: Any) -> Any:
    plugin = Plugin("notes", tmp_path, members, **kwargs)
    presets = bootstrap(object(), plugins=[plugin], tool_registry=ToolRegistry("space_"))
    assert presets.problems == [], presets.problems
    return presets.members


def test_a_prompt_refuses_unknown_and_missing_arguments(tmp_path: Path) -> None:
    members = members_of(
        tmp_path,
        """\
        prompts:
          - id: notes.ask
            description: d
            arguments: [{name: topic, required: true}, {name: tone}]
            messages: [{role: user, text: "About {{topic}}, {{tone}}: use {{notes.act}}."}]
        """,
        prompts="notes.ask",
    )
    assert members.prompt_id("space_notes_ask") == "notes.ask"
    assert members.render("notes.ask", {"topic": "tea"}, None, lambda t: "space_" + t) == [
        {"role": "user", "content": {"type": "text", "text": "About tea, : use space_notes.act."}}
    ]
    with pytest.raises(ContentError, match=r"needs the argument\(s\) 'topic'"):
        members.render("notes.ask", {}, None, lambda t: None)
    with pytest.raises(ContentError, match="has no argument 'mood'; it takes: topic, tone"):
        members.render("notes.ask", {"topic": "x", "mood": "y"}, None, lambda t: None)


def test_a_render_of_three_parameters_gets_the_context_and_one_of_two_does_not(
    tmp_path: Path,
) -> None:
    seen: list[Any] = []

    def asking(app: Any, arguments: Any, context: Any) -> list[Any]:
        seen.append(context)
        return [results.text("asked" if context is not None else "unasked")]

    members = members_of(
        tmp_path,
        """\
        prompts:
          - {id: notes.ask, description: d}
          - {id: notes.plain, description: d}
        """,
        prompts="notes.ask, notes.plain",
        providers=[
            ContentProvider("notes.ask", render=asking),
            ContentProvider("notes.plain", render=lambda app, arguments: [results.text("p")]),
        ],
    )
    assert (members.asks("notes.ask"), members.asks("notes.plain")) == (True, False)
    context = object()
    assert members.render("notes.ask", {}, None, lambda t: None, context)[0]["content"] == {
        "type": "text",
        "text": "asked",
    }
    # Without a server (or on a legacy connection) it gets None, and renders without asking.
    assert members.render("notes.ask", {}, None, lambda t: None)[0]["content"]["text"] == "unasked"
    assert seen == [context, None]
    assert members.render("notes.plain", {}, None, lambda t: None, context)[0]["content"] == {
        "type": "text",
        "text": "p",
    }


def test_a_failing_provider_is_a_content_error_naming_it_without_a_traceback(
    tmp_path: Path,
) -> None:
    def broken(app: Any, variables: Any) -> str:
        raise KeyError("secret")

    members = members_of(
        tmp_path,
        'resources: [{id: notes.live, uri: "notes://live"}]\n',
        resources="notes.live",
        providers=[ContentProvider("notes.live", read=broken)],
    )
    spec, _ = members.resource_for("notes://live")
    with pytest.raises(ContentError) as info:
        members.read(spec, "notes://live", {}, None)
    assert info.value.invalid_params is False
    assert str(info.value).startswith(
        "the content provider of 'notes.live' failed in read: KeyError: 'secret' at "
        "test_core_bundles.py:"
    )


# ---------------------------------------------------------------- URI templates

VALUE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@given(VALUE, VALUE)
def test_a_template_reads_back_the_values_it_was_expanded_with(a: str, b: str) -> None:
    template = UriTemplate.parse("notes://{a}/page/{b}{?rev}")
    uri = f"notes://{quote(a, safe='')}/page/{quote(b, safe='')}?rev=3"
    assert template.match(uri) == {"a": a, "b": b, "rev": "3"}
    assert template.match(f"notes://{quote(a, safe='')}/page/{quote(b, safe='')}") == {
        "a": a,
        "b": b,
    }


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x://{a", "has no closing '}'"),
        ("x://a}", "closes no expression"),
        ("x://{a*}", "explode (*) modifier"),
        ("x://{a:2}", "prefix (:N) modifier"),
        ("x://{a}{b}", "nothing between them"),
        ("x://{+a}/{+b}", "only one '+' or '#' variable"),
        ("x://{a}/{a}", "appears twice"),
        ("x://page one/{a}", "is not allowed in a URI"),
        ("x://fixed", "no variable"),
    ],
)
def test_a_template_that_does_not_parse_says_why(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        UriTemplate.parse(text)


# ---------------------------------------------------------------- start-up


@pytest.mark.slow
def test_a_tools_only_server_never_imports_the_members_code(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "tools.yaml").write_text(
        "presets:\n  - {name: t, default_state: auto, risk: normal, contexts: [{surface: any}],"
        " tool_ids: [t.act]}\n"
    )
    code = textwrap.dedent(
        f"""
        import sys, anyio
        from pathlib import Path
        from mcp import Client
        from agent_presets import ToolAdapter, bootstrap, build_server, hookimpl

        class Tools:
            @hookimpl
            def presets_preset_files(self):
                return [Path({str(tmp_path / "tools.yaml")!r})]

            @hookimpl
            def presets_tool_adapters(self):
                return [ToolAdapter("t.act", "", "Act.", {{"type": "object"}},
                                    lambda app, a: "ok", name="t_act")]

        presets = bootstrap(object(), plugins=[Tools()])
        assert not presets.problems, presets.problems
        server = build_server(presets)

        async def main():
            async with Client(server, mode="legacy") as client:
                await client.list_tools()
                await client.list_prompts()
                await client.list_resources()
                await client.read_resource("presets://active/status")

        anyio.run(main)
        print(sorted(m for m in sys.modules if m.startswith("agent_presets.")))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = result.stdout
    assert "agent_presets.server.mcp.catalog" in loaded
    assert (
        "agent_presets.lib.bundles" not in loaded and "agent_presets.lib.uritemplate" not in loaded
    )


def test_a_hostile_uri_cannot_make_matching_back_up_through_the_variables() -> None:
    # Were each variable free to hold '-', this 8 KiB URI would take hours to refuse.
    template = UriTemplate.parse("x://{a}-{b}-{c}-{d}-{e}/end")
    assert template.match("x://" + "-" * 8000 + "!") is None
    assert template.match("x://1-2-3-4-5/end") == dict(zip("abcde", "12345", strict=True))
    assert template.match("x://" + "y" * 9000) is None  # past MAX_URI_LENGTH: no template fits
