"""presets_search's index and the server's discovery rules, without a client.

The index (``agent_presets.lib.toolsearch``) is library code; the rules of who
gets the two tools, and how a budget cuts the list, are ``discovery.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets.lib.toolformats import CLIENTS, DEFAULT_CLIENT, client_format
from agent_presets.lib.toolsearch import ToolIndex, catalog_docs, query_words, words
from agent_presets.server import ServeConfig
from agent_presets.server.clients import KNOWN_CLIENTS, known_not_to_relist
from agent_presets.server.mcp import build_server
from agent_presets.server.mcp.discovery import ALWAYS_LOAD, Relisting
from agent_presets.server.policy import Profile, ToolPolicy
from agent_presets_general import SpaceHost


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    host = SpaceHost(tmp_path_factory.mktemp("discovery") / "state")
    presets = host.start()
    host.update_context({"surface": "scene", "activity": None})
    built = build_server(presets, ServeConfig(tool_budget=3000))
    built.discovery.index()
    yield built
    built.close()
    host.close()


# ------------------------------------------------------------------ the index


def test_words_split_names_and_stem_them() -> None:
    assert words("space_drawing_insertShape layers") == [
        "space",
        "draw",
        "insert",
        "shape",
        "layer",
    ]
    assert "the" not in words("the shape") and words("") == []


def test_a_query_word_also_counts_as_the_verb_it_means() -> None:
    assert "delet" in query_words("remove the old layer")
    assert set(query_words("show it")) >= {"show", "get", "list"}


def test_the_index_ranks_by_words_and_a_filter_hides_without_taking_a_place(
    server: Any,
) -> None:
    presets = server.presets
    index = ToolIndex(catalog_docs(presets.tool_adapters, presets.registry.list()))
    [top] = index.search("add a box to the 3D scene", 1)
    assert top[0].name == "space_scene_add_cuboid" and top[1] > 0
    hidden = index.search("add a box to the 3D scene", 3, lambda d: d.name != top[0].name)
    assert len(hidden) == 3 and all(d.name != top[0].name for d, _ in hidden)
    assert index.search("zzzz qqqq", 5) == [] and index.search("box", 0) == []


def test_a_tool_no_preset_lists_is_not_indexed(server: Any) -> None:
    presets = server.presets
    docs = catalog_docs(presets.tool_adapters, [])
    assert docs == [] and ToolIndex(docs).search("box", 5) == []


# ------------------------------------------------------------------ who gets the two tools


@pytest.mark.parametrize(
    ("name", "version", "known"),
    [
        ("codex-mcp-client", "0.171.0", True),
        ("codex-mcp-client", "0.150.2", True),
        ("codex-mcp-client", "0.172.0", False),
        ("codex-mcp-client", None, False),
        ("codex-mcp-client", "nightly", False),
        ("claude-code", "2.1.332", False),
        ("opencode", "1.0.0", False),
    ],
)
def test_the_known_clients_table_matches_names_and_versions(
    name: str, version: str | None, known: bool
) -> None:
    assert (known_not_to_relist((name, version)) is not None) is known
    assert known_not_to_relist(None) is None
    assert all(k.note for k in KNOWN_CLIENTS)


class Conn:
    """A connection's identity, as the server keys it (weakly: a closed one is forgotten)."""


def test_seen_not_to_relist_only_past_the_window_after_a_change() -> None:
    seen = Relisting(window=3.0)
    conn, other = Conn(), Conn()
    seen.request(conn, "local", True, now=10.0)  # it listed
    seen.request(other, "local", True, now=10.0)
    seen.changed(now=11.0)
    seen.request(conn, "local", False, now=12.0)  # inside the window: not judged yet
    assert not seen.seen(conn, "local")
    seen.request(other, "local", True, now=12.5)  # re-listed in time
    seen.request(other, "local", False, now=20.0)
    assert not seen.seen(other, "local")
    seen.request(conn, "local", False, now=14.5)  # past it, never re-listed
    assert seen.seen(conn, "local") and "local" in seen.principals
    assert seen.seen(Conn(), "local")  # a reconnect of that principal too
    assert not seen.seen(Conn(), "alice")


def test_a_modern_request_is_judged_by_its_principal() -> None:
    seen = Relisting(window=1.0)
    seen.request(None, "alice", True, now=0.0)
    seen.changed(now=1.0)
    seen.request(None, "alice", False, now=3.0)
    assert seen.seen(None, "alice") and not seen.seen(None, "bob")


def test_a_client_that_never_listed_is_never_judged() -> None:
    seen = Relisting(window=1.0)
    seen.changed(now=0.0)
    seen.request(Conn(), "local", False, now=5.0)
    assert not seen.principals


# ------------------------------------------------------------------ gates in the search


def test_a_token_profile_hides_tools_from_the_search(server: Any) -> None:
    presets = server.presets
    allowed = ToolPolicy.allow_list(presets, ["scene-object-tools"])
    profiles = {"narrow": Profile("narrow", allow=allowed)}
    server.policy.profiles = profiles.get
    try:
        for query in ("add a light", "switch the surface", "draw an ellipse", "shell"):
            hits = server.discovery.search(query, 20, "narrow")["results"]
            assert {h["name"] for h in hits} <= set(allowed.tools)
        assert server.discovery.search("add a light", 20, "gone")["results"] == []
    finally:
        server.policy.profiles = None


# ------------------------------------------------------------------ the budget


@settings(max_examples=examples(40), deadline=None)
@given(budget=st.integers(min_value=1, max_value=12_000), client=st.sampled_from(CLIENTS))
def test_the_list_never_passes_the_budget_beyond_the_servers_own_tools(
    server: Any, budget: int, client: str
) -> None:
    from agent_presets.lib.budget import Budget, get_tokenizer

    discovery = server.discovery
    discovery.tool_budget = budget
    try:
        entries = server._visible(server.tool_entries(), None)
        narrowed = discovery.narrow(entries, discovery._own(entries), client=client)
    finally:
        discovery.tool_budget = 3000
    counter = Budget(get_tokenizer(), client=client)
    cost = sum(counter.entry(e) for e in narrowed.entries)
    assert cost == narrowed.tokens
    registry = server.tool_registry
    own = [e for e in narrowed.entries if (t := registry.get(e["name"])) is None or not t.preset]
    own_cost = sum(counter.entry(e) for e in own)
    assert cost <= max(budget, own_cost)
    assert all(e["_meta"][ALWAYS_LOAD] is True for e in narrowed.entries)
    listed = {e["name"] for e in narrowed.entries}
    assert listed.isdisjoint(narrowed.left_out)
    assert listed | set(narrowed.left_out) >= {e["name"] for e in entries}


@pytest.mark.parametrize(
    ("name", "client"),
    [
        ("claude-code", "claude-code"),
        ("codex-mcp-client", "codex"),
        ("opencode", "opencode"),
        ("some-other-client", DEFAULT_CLIENT),
        (None, DEFAULT_CLIENT),
    ],
)
def test_a_client_is_counted_in_its_own_format_an_unknown_one_in_the_default(
    name: str | None, client: str
) -> None:
    assert client_format(name) == client


def test_a_bad_tool_budget_or_discovery_is_refused_by_the_config() -> None:
    from agent_presets.lib.model import PresetError

    with pytest.raises(PresetError, match="at least 1 token"):
        ServeConfig(tool_budget=0)
    with pytest.raises(PresetError, match="is not one of: auto, list, search"):
        ServeConfig(discovery="sometimes")  # type: ignore[arg-type]


def test_serve_refuses_a_tool_budget_with_discovery_list(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_presets.cli import main

    result = CliRunner().invoke(
        main,
        ["serve", "--state-dir", str(tmp_path), "--tool-budget", "4000", "--discovery", "list"],
    )
    assert result.exit_code == 2
    assert "--tool-budget needs presets_search and presets_call" in result.output
    assert not (tmp_path / "events.jsonl").exists()


def test_a_budget_server_is_built_without_waiting_for_the_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stock Codex sends its first model request soon after it starts a server: a server
    that loads the tokenizer before answering initialize was offered no tools at all."""
    import threading
    import time

    import agent_presets.lib.budget as budget

    loaded = threading.Event()
    release = threading.Event()
    real = budget.get_tokenizer

    def slow(name: str = budget.DEFAULT_TOKENIZER) -> Any:
        release.wait(10)
        loaded.set()
        return real(name)

    monkeypatch.setattr(budget, "get_tokenizer", slow)
    host = SpaceHost(tmp_path / "state")
    presets = host.start()
    start = time.perf_counter()
    built = build_server(presets, ServeConfig(tool_budget=3000))
    try:
        assert time.perf_counter() - start < 5 and not loaded.is_set()
    finally:
        release.set()
        built.close()
        host.close()
