"""Invariants of the graph model under arbitrary sequences of operations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=150, deadline=None)
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


@settings(max_examples=150, deadline=None)
@given(OPERATIONS)
def test_a_saved_state_loads_back_identically(operations: list[Any]) -> None:
    graph, _ = _run(operations)
    state = json.loads(json.dumps(graph.to_state()))
    assert Graph.factory(state, lambda: None).to_state() == graph.to_state()
    other = Graph()
    other.add_node("to be replaced")
    other.restore(state)
    assert other.to_state() == graph.to_state()


@settings(max_examples=150, deadline=None)
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
