"""Stable delivery's rules: who is served stable, and that a caller's own calls never move
its list (``agent_presets.server.delivery``; the wire is tests/e2e/test_e2e_delivery.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from agent_presets.lib.model import ActivePreset, Resolution, ToolDef
from agent_presets.server import ServeConfig
from agent_presets.server.delivery import (
    STABLE_CLIENTS,
    Listings,
    agent_call,
    choose,
    signature,
)
from agent_presets.server.mcp import build_server
from agent_presets.server.tokens import TokenError, TokenRecord, TokenStore
from agent_presets_general import SpaceHost


@pytest.mark.parametrize(
    ("mode", "modern", "client", "served"),
    [
        ("auto", True, None, "stable"),
        ("auto", True, "some-ide", "stable"),
        ("auto", False, "opencode", "stable"),
        ("auto", False, "codex-mcp-client", "stable"),
        ("auto", False, "claude-code", "stable"),
        ("auto", False, "some-ide", "live"),
        ("auto", False, None, "live"),
        ("live", True, "opencode", "live"),
        ("stable", False, "some-ide", "stable"),
    ],
)
def test_auto_serves_2026_clients_and_the_cache_sensitive_ones_stable(
    mode: Any, modern: bool, client: str | None, served: str
) -> None:
    assert choose(mode, modern=modern, client=client) == served


def test_every_stable_client_says_why() -> None:
    assert {c.name for c in STABLE_CLIENTS} == {"opencode", "codex-mcp-client", "claude-code"}
    assert all(len(c.why) > 20 for c in STABLE_CLIENTS)


def test_a_signature_shows_required_and_optional_arguments_and_the_first_sentence() -> None:
    tool = ToolDef(
        name="space_drawing_insert_shape",
        description="Add a shape to the drawing. It returns the id.",
        input_schema={
            "type": "object",
            "properties": {
                "shape": {"enum": ["rect", "ellipse"]},
                "x": {"type": "number"},
                "points": {"type": "array", "items": {"type": "array"}},
            },
            "required": ["shape"],
        },
        run=lambda arguments: None,
    )
    assert signature(tool) == (
        'space_drawing_insert_shape(shape: "rect"|"ellipse", x?: number, points?: any[][]) '
        "- Add a shape to the drawing."
    )


def test_a_token_keeps_its_delivery_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    _, record = store.create("laptop", delivery="live")
    assert record.delivery == "live"
    again = TokenRecord.from_json(record.to_json(), "tokens.json")
    assert again.delivery == "live"
    with pytest.raises(TokenError, match="delivery 'sometimes' is not one of"):
        store.create("phone", delivery="sometimes")
    _, auto = store.create("tablet", delivery="auto")
    assert auto.delivery is None  # the server's


def _resolution(tools: tuple[str, ...]) -> Resolution:
    return Resolution(
        active_presets=tuple(ActivePreset(t, "context", "normal") for t in tools),
        tool_ids=tools,
        prompt_fragments=(),
    )


@given(
    st.lists(
        st.tuples(st.sampled_from(["alice", "bob", None]), st.sampled_from(["a", "b", "c"])),
        max_size=20,
    )
)
def test_a_principals_listing_moves_only_on_changes_outside_its_own_calls(
    changes: list[tuple[str | None, str]],
) -> None:
    current = {"alice": "a", "bob": "a"}
    listings = Listings(lambda p: (_resolution((current[p],)), (), {}))
    first = {p: listings.listed(p).resolution for p in current}
    expected = dict(first)
    for caller, value in changes:
        for p in current:
            current[p] = value  # one change every principal sees (the host's context)
        if caller is None:
            listings.refresh()
        else:
            with agent_call(caller):
                listings.refresh()
        for p in current:
            if p != caller:
                expected[p] = _resolution((value,))
            assert listings.listed(p).resolution == expected[p]


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with SpaceHost(tmp_path_factory.mktemp("delivery") / "state") as made:
        yield made, made.start()


CONTEXTS = st.sampled_from(
    [
        ("space_app_switch_surface", {"surface": "canvas"}),
        ("space_app_switch_surface", {"surface": "scene"}),
        ("space_app_set_activity", {"activity": "graph"}),
        ("space_app_set_activity", {"activity": "drawing"}),
        ("space_app_set_activity", {"activity": None}),
    ]
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(CONTEXTS, min_size=1, max_size=5))
def test_a_2026_callers_own_switches_never_change_its_list_and_each_result_says_what_is_active(
    host: Any, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    app, presets = host
    app.update_context({"surface": "scene", "activity": None})
    server = build_server(presets, ServeConfig())

    async def drive() -> None:
        async with Client(server) as client:
            first = (await client.list_tools()).tools
            known = {t.name for t in presets.manager.get_tool_defs()}
            for name, args in steps:
                result = await client.call_tool(name, args)
                assert not result.is_error
                notice = "".join(
                    c.text for c in result.content[1:] if getattr(c, "text", "").startswith("[")
                )
                active = {t.name for t in presets.manager.get_tool_defs()}
                for tool in active - known:  # each newly active tool is named in the notice
                    assert f"{tool}(" in notice or tool in notice, (tool, notice)
                known = active
                assert (await client.list_tools()).tools == first

    try:
        anyio.run(drive)
    finally:
        server.close()


def test_a_tool_described_once_is_named_only_when_it_comes_back(host: Any) -> None:
    app, presets = host
    app.update_context({"surface": "scene", "activity": None})
    server = build_server(presets, ServeConfig())
    drawing = [
        ("space_app_switch_surface", {"surface": "canvas"}),
        ("space_app_set_activity", {"activity": "drawing"}),
    ]
    steps = [*drawing, ("space_app_set_activity", {"activity": "graph"}), drawing[1]]

    async def drive() -> list[str]:
        notices = []
        async with Client(server) as client:
            await client.list_tools()
            for name, args in steps:
                result = await client.call_tool(name, args)
                assert result.structured_content is not None
                notices.append(str(result.structured_content.get("presets_notice", "")))
        return notices

    try:
        notices = anyio.run(drive)
    finally:
        server.close()
    first, again = notices[1], notices[3]
    assert "space_drawing_insert_shape(" in first
    assert "space_drawing_insert_shape(" not in again
    assert "Active again, run with space_presets_call:" in again
    assert "space_drawing_insert_shape" in again
