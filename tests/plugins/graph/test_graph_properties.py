"""Invariants of the graph model under arbitrary sequences of operations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent_presets_graph import Graph, GraphError

WORDS = st.sampled_from(["ada", "Ada", "engine", "ENGINE room", "note", "x", "Grace", "née"])
DATA = st.dictionaries(
    st.sampled_from(["topic", "year", "tags"]),
    st.one_of(WORDS, st.integers(-5, 2000), st.lists(WORDS, max_size=2)),
    max_size=2,
)
INDEX = st.integers(0, 12)

OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add_node"), WORDS, DATA),
        st.tuples(st.just("identity"), WORDS, DATA),
        st.tuples(st.just("edge"), INDEX, INDEX, st.one_of(st.none(), WORDS)),
        st.tuples(st.just("load"), INDEX, st.one_of(st.none(), DATA), st.booleans()),
        st.tuples(st.just("focus"), INDEX),
        st.tuples(st.just("open"), INDEX),
        st.tuples(st.just("remove"), st.lists(INDEX, min_size=1, max_size=3, unique=True)),
    ),
    max_size=25,
)


def _pick(graph: Graph, i: int) -> str:
    ids = list(graph.nodes)
    return ids[i % len(ids)] if ids else "missing"


def _apply(graph: Graph, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "add_node":
        graph.add_node(op[1], op[2])
    elif kind == "identity":
        graph.create_identity(op[1], op[2])
    elif kind == "edge":
        graph.add_edge(_pick(graph, op[1]), _pick(graph, op[2]), op[3])
    elif kind == "load":
        graph.load_node(_pick(graph, op[1]), data=op[2], merge=op[3])
    elif kind == "focus":
        graph.focus_node(_pick(graph, op[1]))
    elif kind == "open":
        graph.open_node(_pick(graph, op[1]))
    else:
        graph.remove_nodes(sorted({_pick(graph, i) for i in op[1]}))


def _run(operations: list[tuple[Any, ...]]) -> tuple[Graph, list[int]]:
    saves = [0]
    graph = Graph(lambda: saves.__setitem__(0, saves[0] + 1))
    for op in operations:
        before, count = json.dumps(graph.to_state()), saves[0]
        try:
            _apply(graph, op)
        except GraphError:
            assert json.dumps(graph.to_state()) == before, f"refused {op} changed the graph"
            assert saves[0] == count
            continue
        if json.dumps(graph.to_state()) != before:
            assert saves[0] == count + 1, f"{op} changed the graph without saving exactly once"
    return graph, saves


@settings(max_examples=examples(150), deadline=None)
@given(OPERATIONS)
def test_edges_and_view_only_ever_refer_to_existing_nodes(operations: list[Any]) -> None:
    graph, _ = _run(operations)
    for edge in graph.edges.values():
        assert edge.source in graph.nodes and edge.target in graph.nodes
        assert edge.source != edge.target
    assert set(graph.open) <= set(graph.nodes)
    assert graph.focused is None or graph.focused in graph.open
    triples = [(e.source, e.target, e.label) for e in graph.edges.values()]
    assert len(triples) == len(set(triples))


@settings(max_examples=examples(150), deadline=None)
@given(OPERATIONS)
def test_a_saved_state_loads_back_identically(operations: list[Any]) -> None:
    graph, _ = _run(operations)
    state = json.loads(json.dumps(graph.to_state()))
    assert Graph.factory(state, lambda: None).to_state() == graph.to_state()
    other = Graph()
    other.add_node("to be replaced")
    other.restore(state)
    assert other.to_state() == graph.to_state()


@settings(max_examples=examples(150), deadline=None)
@given(OPERATIONS, WORDS)
def test_search_finds_exactly_the_matching_nodes_labels_first(
    operations: list[Any], query: str
) -> None:
    graph, _ = _run(operations)
    hits = graph.search(query)
    needle = query.casefold()
    label_hits = [h.node.id for h in hits if h.match == "label"]
    assert label_hits == [h.node.id for h in hits[: len(label_hits)]]
    assert set(label_hits) == {n.id for n in graph.nodes.values() if needle in n.label.casefold()}
    for hit in hits[len(label_hits) :]:
        assert needle in json.dumps(hit.node.data, ensure_ascii=False).casefold()
    ranks = [h.rank for h in hits]
    assert ranks == sorted(ranks)


def test_a_saved_state_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(GraphError, match="must be an object"):
        Graph.factory([], lambda: None)  # type: ignore[arg-type]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _paths(item, (*path, i))
    return found


@pytest.mark.slow  # 300 examples, each loading a damaged saved state
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_damaged_state_is_refused_with_a_graph_error_or_loads(data: st.DataObject) -> None:
    """Whatever one field of a snapshot becomes, restore answers cleanly."""
    graph = Graph()
    a, b = graph.add_node("a", {"tags": ["x"]}).id, graph.create_identity("b").id
    graph.add_edge(a, b, "knows")
    graph.focus_node(a)
    state = graph.to_state()
    path = data.draw(st.sampled_from(_paths(state)[1:]))
    target = state
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(JSON)
    before = graph.to_state()
    try:
        graph.restore(state)
    except GraphError:
        assert graph.to_state() == before
    else:
        assert Graph.factory(graph.to_state(), lambda: None).to_state() == graph.to_state()
