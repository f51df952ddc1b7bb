"""The graph persists the rows a change touched, and its order survives a restart."""

from __future__ import annotations

from typing import Any


def changed_rows(app: Any, call: str, **arguments: Any) -> set[str]:
    before = app.saved_rows()
    app.call(call, **arguments)
    after = app.saved_rows()
    return {k for k in {*before, *after} if before.get(k) != after.get(k)}


def test_each_change_writes_only_its_own_rows(app: Any) -> None:
    nodes = [app.node(f"node {i}") for i in range(40)]
    assert changed_rows(app, "add_node", label="one more") == {"node/n41", "graph"}
    assert changed_rows(app, "load_node", id=nodes[3], data={"x": 1}) == {f"node/{nodes[3]}"}
    edge = changed_rows(app, "add_edge", source=nodes[0], target=nodes[1])
    assert edge == {"edge/e42", "graph"}
    assert changed_rows(app, "focus_node", id=nodes[5]) == {"graph"}


def test_insertion_order_survives_a_restart_with_chosen_ids(make_app: Any) -> None:
    app = make_app()
    app.call("load_node", id="zz", label="chosen last in sort order")
    generated = app.node("generated")
    app.call("load_node", id="aa", label="chosen first in sort order")
    app.call("add_edge", source="aa", target="zz")
    app.call("remove_nodes", ids=[generated])
    last = app.node("after a removal")
    before = app.call("get_state")
    assert [n["id"] for n in before["nodes"]] == ["zz", "aa", last]
    assert make_app().call("get_state") == before
