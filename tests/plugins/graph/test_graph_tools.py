"""Every graph tool, called through the manager's tool defs, with its error paths."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from agent_presets import ToolArgumentError


def test_add_node_returns_the_node_with_a_fresh_id(app: Any) -> None:
    first = app.call("add_node", label="Paris", data={"country": "France"})
    second = app.call("add_node", label="Lyon")
    assert first == {
        "id": first["id"],
        "label": "Paris",
        "kind": "node",
        "data": {"country": "France"},
    }
    assert second["id"] != first["id"] and second["data"] == {}
    assert [n["id"] for n in app.state()["nodes"]] == [first["id"], second["id"]]


@pytest.mark.parametrize(
    "arguments",
    [{}, {"label": ""}, {"label": 3}, {"label": "x", "colour": "red"}, {"label": "x", "data": [1]}],
)
def test_add_node_rejects_bad_arguments(app: Any, arguments: dict[str, Any]) -> None:
    with pytest.raises(ToolArgumentError, match="space_graph_add_node"):
        app.call("add_node", **arguments)
    assert app.state()["nodes"] == []


def test_add_node_refuses_a_blank_label(app: Any) -> None:
    assert "non-empty" in app.refused("add_node", label="   ")


def test_add_edge_links_existing_nodes(app: Any) -> None:
    a, b = app.node("Ada"), app.node("Charles")
    edge = app.call("add_edge", source=a, target=b, label="wrote to")
    assert edge == {
        "created": True,
        "id": edge["id"],
        "source": a,
        "target": b,
        "label": "wrote to",
    }
    assert app.state()["edges"] == [{k: v for k, v in edge.items() if k != "created"}]


def test_add_edge_twice_is_idempotent(app: Any) -> None:
    a, b = app.node("Ada"), app.node("Charles")
    edge = app.call("add_edge", source=a, target=b)
    before = app.state()
    again = app.call("add_edge", source=a, target=b)
    assert again == {**edge, "created": False}
    assert app.state() == before
    # Direction and label make an edge distinct.
    assert app.call("add_edge", source=b, target=a)["created"] is True
    assert app.call("add_edge", source=a, target=b, label="knows")["created"] is True
    assert len(app.state()["edges"]) == 3


def test_add_edge_refuses_unknown_nodes_and_self_loops(app: Any) -> None:
    a = app.node("Ada")
    message = app.refused("add_edge", source=a, target="n99")
    assert "'n99'" in message and "space_graph_add_node" in message
    assert "'ghost'" in app.refused("add_edge", source="ghost", target=a)
    assert "two different nodes" in app.refused("add_edge", source=a, target=a)
    with pytest.raises(ToolArgumentError):
        app.call("add_edge", source=a)


def test_load_node_fetches_a_node_with_its_neighbourhood(app: Any) -> None:
    a, b, c = app.node("Ada"), app.node("Charles"), app.node("Engine")
    app.call("add_edge", source=a, target=b)
    app.call("add_edge", source=c, target=a)
    before = app.state()
    loaded = app.call("load_node", id=a)
    assert app.state() == before
    assert loaded["created"] is False
    assert loaded["node"]["label"] == "Ada"
    assert {(e["source"], e["target"]) for e in loaded["edges"]} == {(a, b), (c, a)}
    assert [n["label"] for n in loaded["neighbours"]] == ["Charles", "Engine"]


def test_load_node_merges_or_replaces_data_and_renames(app: Any) -> None:
    a = app.node("Ada", born=1815, field="maths")
    merged = app.call("load_node", id=a, data={"field": "computing", "died": 1852})
    assert merged["node"]["data"] == {"born": 1815, "field": "computing", "died": 1852}
    replaced = app.call("load_node", id=a, data={"note": "poet's daughter"}, merge=False)
    assert replaced["node"]["data"] == {"note": "poet's daughter"}
    renamed = app.call("load_node", id=a, label="Ada Lovelace")
    assert renamed["node"]["label"] == "Ada Lovelace"
    assert renamed["node"]["data"] == {"note": "poet's daughter"}


def test_load_node_upserts_a_node_under_a_chosen_id(app: Any) -> None:
    created = app.call("load_node", id="doc:42", label="Notes", data={"pages": 3})
    assert created["created"] is True
    assert created["node"] == {
        "id": "doc:42",
        "label": "Notes",
        "kind": "node",
        "data": {"pages": 3},
    }
    assert app.call("add_edge", source="doc:42", target=app.node("Ada"))["created"] is True


def test_load_node_refuses_an_unknown_id_without_a_label(app: Any) -> None:
    message = app.refused("load_node", id="n404", data={"x": 1})
    assert "give a label" in message
    with pytest.raises(ToolArgumentError, match="'id'"):
        app.call("load_node", id="has space", label="x")


def test_generated_ids_skip_ids_chosen_by_upsert(app: Any) -> None:
    app.call("load_node", id="n1", label="chosen")
    fresh = app.node("generated")
    assert fresh != "n1"
    assert len({n["id"] for n in app.state()["nodes"]}) == 2


def test_create_identity_makes_an_identity_node(app: Any) -> None:
    person = app.call("create_identity", name="Ada Lovelace", data={"email": "ada@example.org"})
    assert person["kind"] == "identity"
    assert person["label"] == "Ada Lovelace"
    assert person["data"] == {"email": "ada@example.org"}


def test_create_identity_refuses_a_second_identity_with_the_same_name(app: Any) -> None:
    first = app.call("create_identity", name="Ada Lovelace")
    message = app.refused("create_identity", name="  ada lovelace ")
    assert repr(first["id"]) in message
    app.node("Ada Lovelace")  # a plain node of that name is not an identity
    with pytest.raises(ToolArgumentError):
        app.call("create_identity", label="Ada")


def test_focus_node_focuses_and_opens(app: Any) -> None:
    a, b = app.node("Ada"), app.node("Charles")
    result = app.call("focus_node", id=a)
    assert result["view"] == {"focused": a, "open": [a]}
    assert result["node"]["id"] == a
    assert app.call("focus_node", id=b)["view"] == {"focused": b, "open": [a, b]}
    assert app.call("focus_node", id=a)["view"] == {"focused": a, "open": [a, b]}
    assert "space_graph_search_nodes" in app.refused("focus_node", id="n77")


def test_open_node_opens_without_moving_the_focus(app: Any) -> None:
    a, b = app.node("Ada"), app.node("Charles")
    app.call("focus_node", id=a)
    assert app.call("open_node", id=b)["view"] == {"focused": a, "open": [a, b]}
    assert app.call("open_node", id=b)["view"] == {"focused": a, "open": [a, b]}
    app.refused("open_node", id="nope")


def test_search_ranks_label_matches_before_data_matches(app: Any) -> None:
    in_data = app.node("Notebook", topic="Engine design")
    substring = app.node("Analytical Engine")
    prefix = app.node("Engine room")
    exact = app.node("engine")
    app.node("Unrelated", topic="poetry")
    result = app.call("search_nodes", query="ENGINE")
    assert [r["id"] for r in result["results"]] == [exact, prefix, substring, in_data]
    assert [r["match"] for r in result["results"]] == ["label", "label", "label", "data"]
    assert result["results"][-1]["path"] == "topic"
    assert result["total"] == 4


def test_search_looks_into_nested_data_keys_and_numbers(app: Any) -> None:
    deep = app.node("Ada", links={"letters": [{"to": "Babbage"}]})
    year = app.node("Census", year=1815)
    keyed = app.node("Profile", Email="x")
    assert app.call("search_nodes", query="babbage")["results"] == [
        {"id": deep, "label": "Ada", "kind": "node", "match": "data", "path": "links.letters[0].to"}
    ]
    assert [r["id"] for r in app.call("search_nodes", query="1815")["results"]] == [year]
    assert [r["id"] for r in app.call("search_nodes", query="email")["results"]] == [keyed]


def test_search_filters_by_kind_and_limits(app: Any) -> None:
    person = app.call("create_identity", name="Grace")["id"]
    for i in range(5):
        app.node(f"Grace note {i}")
    only_people = app.call("search_nodes", query="grace", kind="identity")
    assert [r["id"] for r in only_people["results"]] == [person]
    limited = app.call("search_nodes", query="grace", limit=2)
    assert limited["total"] == 6 and len(limited["results"]) == 2
    assert app.call("search_nodes", query="nothing like it")["results"] == []


def test_search_refuses_an_empty_query(app: Any) -> None:
    assert "empty" in app.refused("search_nodes", query="   ")
    with pytest.raises(ToolArgumentError):
        app.call("search_nodes", query="x", limit=0)


def test_remove_nodes_takes_their_edges_and_view_entries(app: Any) -> None:
    a, b, c = app.node("Ada"), app.node("Charles"), app.node("Engine")
    ab = app.call("add_edge", source=a, target=b)["id"]
    bc = app.call("add_edge", source=b, target=c)["id"]
    ca = app.call("add_edge", source=c, target=a)["id"]
    app.call("open_node", id=a)
    app.call("focus_node", id=b)
    result = app.call("remove_nodes", ids=[b])
    assert result == {
        "removed_nodes": [b],
        "removed_edges": [ab, bc],
        "view": {"focused": None, "open": [a]},
    }
    state = app.state()
    assert [n["id"] for n in state["nodes"]] == [a, c]
    assert [e["id"] for e in state["edges"]] == [ca]


def test_remove_nodes_with_an_unknown_id_removes_nothing(app: Any) -> None:
    a = app.node("Ada")
    message = app.refused("remove_nodes", ids=[a, "n999"])
    assert "'n999'" in message and "nothing was removed" in message
    with pytest.raises(ToolArgumentError):
        app.call("remove_nodes", ids=[])
    with pytest.raises(ToolArgumentError):
        app.call("remove_nodes", ids=[a, a])


def test_state_round_trips_through_restore(app: Any) -> None:
    a, b = app.node("Ada", born=1815), app.call("create_identity", name="Charles")["id"]
    app.call("add_edge", source=a, target=b, label="knows")
    app.call("focus_node", id=b)
    snapshot = app.call("get_state")
    app.call("remove_nodes", ids=[a])
    app.node("Later")
    assert app.call("restore_state", state=snapshot) == {
        "nodes": 2,
        "edges": 1,
        "view": {"focused": b, "open": [b]},
    }
    assert app.call("get_state") == snapshot
    # New ids never reuse an id the restored graph holds.
    assert app.node("After") not in {a, b}


def test_get_state_is_a_copy(app: Any) -> None:
    app.node("Ada", tags=["x"])
    snapshot = app.call("get_state")
    snapshot["nodes"][0]["data"]["tags"].append("changed")
    assert app.call("get_state")["nodes"][0]["data"] == {"tags": ["x"]}


def _corruptions() -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    return [
        (
            "unknown node 'zz'",
            lambda s: s["edges"].append(
                {"id": "e9", "source": "n1", "target": "zz", "label": None}
            ),
        ),
        ("appears twice", lambda s: s["nodes"].append(dict(s["nodes"][0]))),
        ("unknown field", lambda s: s.update(extra=1)),
        ("view refers to unknown node", lambda s: s["view"].update(focused="gone")),
        ("kind", lambda s: s["nodes"][0].update(kind="robot")),
        ("version", lambda s: s.update(version=99)),
        ("lacks label", lambda s: s["nodes"][0].pop("label")),
        ("duplicate edge", lambda s: s["edges"].append({**s["edges"][0], "id": "e77"})),
        ("next_id", lambda s: s.update(next_id=0)),
    ]


@pytest.mark.parametrize(("expected", "corrupt"), _corruptions(), ids=lambda v: str(v)[:20])
def test_restore_refuses_an_invalid_state_and_changes_nothing(
    app: Any, expected: str, corrupt: Callable[[dict[str, Any]], None]
) -> None:
    a, b = app.node("Ada"), app.node("Charles")
    app.call("add_edge", source=a, target=b)
    state = copy.deepcopy(app.call("get_state"))
    corrupt(state)
    assert expected in app.refused("restore_state", state=state)


def test_graph_survives_a_restart(make_app: Callable[..., Any]) -> None:
    app = make_app()
    a, b = app.node("Ada"), app.node("Charles")
    app.call("add_edge", source=a, target=b)
    app.call("focus_node", id=b)
    before = app.call("get_state")
    restarted = make_app()
    assert restarted.call("get_state") == before
    assert restarted.call("search_nodes", query="ada")["results"][0]["id"] == a


def test_each_world_has_its_own_graph(app: Any) -> None:
    home = app.node("Home node")
    app.host.shell.create_world("lab")
    app.host.shell.switch_world("lab")
    assert app.call("search_nodes", query="home")["results"] == []
    app.refused("focus_node", id=home)
    lab = app.node("Lab node")
    app.host.shell.switch_world("home")
    assert [r["id"] for r in app.call("search_nodes", query="node")["results"]] == [home]
    assert [n["label"] for n in app.host.partition_runtime("lab", "graph").to_state()["nodes"]] == [
        "Lab node"
    ]
    assert lab
