"""The headless graph: nodes, edges, identities and the host's view of them.

Pure Python with no core imports, so it can be tested and embedded alone.
Every refusal raises ``GraphError`` *before* anything changes, and every
change calls ``changed()`` once. Opened on a host table (``Graph.from_table``), a
change also writes the rows it touched: ``graph`` (view and counters),
``node/<id>`` and ``edge/<id>``, each with its place in insertion order.
Other writers may share the table (replicas on one Redis): the public methods
run through ``agent_presets.TableSync``, which reloads what another writer
committed and runs a change again when its commit lost the race; the id and
place counters are in the ``graph`` row, which every change that takes an id
writes in its own transaction.

Edges are directed. Adding an edge that already exists (same source, target
and label) is idempotent: the existing edge comes back with ``created: False``
instead of a second copy, so a model that retries a call does not duplicate
links.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from agent_presets import RowTable, TableRuntime, synced
from agent_presets_graph.terms import ID_PATTERN as ID_PATTERN
from agent_presets_graph.terms import MAX_LABEL as MAX_LABEL
from agent_presets_graph.terms import NODE_KINDS as NODE_KINDS
from agent_presets_graph.terms import GraphError as GraphError

NodeKind = Literal["node", "identity"]
STATE_VERSION: Final = 1
ID_RE: Final = re.compile(ID_PATTERN)


@dataclass
class Node:
    id: str
    label: str
    kind: NodeKind = "node"
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "kind": self.kind,
            "data": copy.deepcopy(self.data),
        }


@dataclass(frozen=True)
class Edge:
    id: str
    source: str
    target: str
    label: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "target": self.target, "label": self.label}


@dataclass(frozen=True)
class SearchHit:
    node: Node
    match: Literal["label", "data"]
    rank: int
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        hit: dict[str, Any] = {
            "id": self.node.id,
            "label": self.node.label,
            "kind": self.node.kind,
            "match": self.match,
        }
        if self.path is not None:
            hit["path"] = self.path
        return hit


class Graph(TableRuntime):
    """One world's graph.

    Made by ``Graph.from_table(table)`` for the headless host, or
    ``Graph.factory(saved_state, changed)`` for a state saved whole.
    """

    error = GraphError

    def __init__(
        self, changed: Callable[[], None] | None = None, *, table: RowTable | None = None
    ) -> None:
        super().__init__(changed, table=table)
        self.nodes: dict[str, Node] = {}
        self.edges: dict[str, Edge] = {}
        self.focused: str | None = None
        self.open: list[str] = []
        self._next_id = 1
        # Node and edge ids may be chosen by the caller, so rows keep their order apart.
        self._places: dict[str, int] = {}
        self._next_place = 1

    def read_rows(self, rows: dict[str, Any]) -> None:
        meta = rows.get("graph", {})
        ordered = sorted(
            (value["place"], key, value) for key, value in rows.items() if "place" in value
        )
        self.load_state(
            {
                "version": meta.get("version", STATE_VERSION),
                "nodes": [v["node"] for _, k, v in ordered if k.startswith("node/")],
                "edges": [v["edge"] for _, k, v in ordered if k.startswith("edge/")],
                "view": meta.get("view", {}),
                "next_id": meta.get("next_id", 1),
            }
        )
        self._places = {k.split("/", 1)[1]: place for place, k, _ in ordered}
        self._next_place = meta.get("next_place", len(ordered) + 1)

    def _place(self, item_id: str) -> int:
        place = self._places.get(item_id)
        if place is None:
            place = self._places[item_id] = self._next_place
            self._next_place += 1
        return place

    def row(self, key: str) -> Any:
        if key == "graph":
            return {
                "version": STATE_VERSION,
                "view": self.view(),
                "next_id": self._next_id,
                "next_place": self._next_place,
            }
        kind, _, item_id = key.partition("/")
        item = self.nodes.get(item_id) if kind == "node" else self.edges.get(item_id)
        if item is None:
            self._places.pop(item_id, None)
            return None
        return {"place": self._place(item_id), kind: item.to_dict()}

    def row_keys(self) -> list[str]:
        return [f"node/{i}" for i in self.nodes] + [f"edge/{i}" for i in self.edges] + ["graph"]

    def save(self, *keys: str) -> None:
        # Item rows first: a new item takes its place before ``graph`` records the count.
        super().save(*sorted(keys, key=lambda k: k == "graph"))

    def save_all(self) -> None:
        self._places, self._next_place = {}, 1  # every row takes its place anew, in order
        super().save_all()

    # -- nodes ---------------------------------------------------------------

    @synced
    def add_node(
        self, label: str, data: Mapping[str, Any] | None = None, kind: NodeKind = "node"
    ) -> Node:
        clean_label, clean_data = _label(label), _data(data)  # refuse before taking an id
        node = Node(self._new_id("n"), clean_label, kind, clean_data)
        self.nodes[node.id] = node
        self.save(f"node/{node.id}", "graph")
        return node

    @synced
    def create_identity(self, name: str, data: Mapping[str, Any] | None = None) -> Node:
        """An identity node stands for one person or entity, so its name must be unique."""
        name = _label(name)
        for node in self.nodes.values():
            if node.kind == "identity" and node.label.casefold() == name.casefold():
                raise GraphError(
                    f"an identity named {node.label!r} already exists as node {node.id!r}; "
                    "use that node (add edges to it or load it with new data) instead"
                )
        return self.add_node(name, data, kind="identity")

    @synced
    def load_node(
        self,
        node_id: str,
        *,
        label: str | None = None,
        data: Mapping[str, Any] | None = None,
        merge: bool = True,
    ) -> tuple[Node, bool]:
        """Upsert a node by id; returns ``(node, created)``.

        An existing node takes the new label, and new data merged key by key
        (or replacing it when ``merge`` is false); with neither, it is only
        fetched again. A missing node is created when a label is given.
        """
        _check_id(node_id)
        new_data = _data(data) if data is not None else None
        node = self.nodes.get(node_id)
        if node is None:
            if label is None:
                raise GraphError(
                    f"no node with id {node_id!r}; give a label to create it, or search "
                    "for the node's id with space_graph_search_nodes"
                )
            node = Node(node_id, _label(label), "node", new_data or {})
            self.nodes[node_id] = node
            self.save(f"node/{node_id}", "graph")
            return node, True
        new_label = _label(label) if label is not None else None
        if new_label is None and new_data is None:
            return node, False
        if new_label is not None:
            node.label = new_label
        if new_data is not None:
            node.data = {**node.data, **new_data} if merge else new_data
        self.save(f"node/{node_id}")
        return node, False

    @synced
    def get_node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise GraphError(
                f"no node with id {node_id!r}; find node ids with space_graph_search_nodes"
            )
        return node

    @synced
    def remove_nodes(self, ids: list[str]) -> tuple[list[str], list[str]]:
        """Remove nodes and every edge touching them; all ids must exist."""
        unknown = [i for i in ids if i not in self.nodes]
        if unknown:
            raise GraphError(
                f"no node with id {', '.join(map(repr, unknown))}; nothing was removed. "
                "Check the ids with space_graph_search_nodes and try again"
            )
        doomed = set(ids)
        removed_edges = [
            e.id for e in self.edges.values() if e.source in doomed or e.target in doomed
        ]
        for edge_id in removed_edges:
            del self.edges[edge_id]
        removed_nodes = [i for i in self.nodes if i in doomed]
        for node_id in removed_nodes:
            del self.nodes[node_id]
        self.open = [i for i in self.open if i not in doomed]
        if self.focused in doomed:
            self.focused = None
        keys = [f"edge/{i}" for i in removed_edges] + [f"node/{i}" for i in removed_nodes]
        self.save(*keys, "graph")
        return removed_nodes, removed_edges

    # -- edges ---------------------------------------------------------------

    @synced
    def add_edge(self, source: str, target: str, label: str | None = None) -> tuple[Edge, bool]:
        """Link two existing nodes; returns ``(edge, created)`` (see the module docstring)."""
        missing = [i for i in (source, target) if i not in self.nodes]
        if missing:
            raise GraphError(
                f"no node with id {', '.join(map(repr, dict.fromkeys(missing)))}; edges join "
                "existing nodes, so create the node first (space_graph_add_node)"
            )
        if source == target:
            raise GraphError(
                f"an edge must join two different nodes, but source and target are both {source!r}"
            )
        label = _label(label) if label is not None else None
        for edge in self.edges.values():
            if (edge.source, edge.target, edge.label) == (source, target, label):
                return edge, False
        edge = Edge(self._new_id("e"), source, target, label)
        self.edges[edge.id] = edge
        self.save(f"edge/{edge.id}", "graph")
        return edge, True

    @synced
    def edges_of(self, node_id: str) -> list[Edge]:
        return [e for e in self.edges.values() if node_id in (e.source, e.target)]

    @synced
    def neighbourhood(self, node_id: str) -> dict[str, Any]:
        """A node with its edges and the labels of the nodes at their other ends."""
        node = self.get_node(node_id)
        edges = self.edges_of(node_id)
        others = dict.fromkeys(e.target if e.source == node_id else e.source for e in edges)
        return {
            "node": node.to_dict(),
            "edges": [e.to_dict() for e in edges],
            "neighbours": [
                {"id": i, "label": self.nodes[i].label, "kind": self.nodes[i].kind} for i in others
            ],
        }

    # -- view ----------------------------------------------------------------

    @synced
    def open_node(self, node_id: str) -> bool:
        """Add a node to the open list; returns whether it was newly opened."""
        self.get_node(node_id)
        if node_id in self.open:
            return False
        self.open.append(node_id)
        self.save("graph")
        return True

    @synced
    def focus_node(self, node_id: str) -> None:
        """Focus a node; a focused node is always open too."""
        self.get_node(node_id)
        if self.focused == node_id and node_id in self.open:
            return
        self.focused = node_id
        if node_id not in self.open:
            self.open.append(node_id)
        self.save("graph")

    @synced
    def view(self) -> dict[str, Any]:
        return {"focused": self.focused, "open": list(self.open)}

    @synced
    def console_view(self) -> dict[str, Any]:
        """What the browser console draws for this world: a node-link picture."""
        from agent_presets_graph.picture import node_link_svg

        svg = node_link_svg(list(self.nodes.values()), list(self.edges.values()), self.focused)
        return {"kind": "svg", "svg": svg}

    # -- search --------------------------------------------------------------

    @synced
    def search(self, query: str, *, kind: NodeKind | None = None) -> list[SearchHit]:
        """Case-insensitive search: exact label, label prefix, label substring, then data.

        Within one rank nodes keep their insertion order, so the result is
        deterministic.
        """
        needle = query.strip().casefold()
        if not needle:
            raise GraphError("the search query is empty; give a word to look for")
        hits: list[SearchHit] = []
        for node in self.nodes.values():
            if kind is not None and node.kind != kind:
                continue
            label = node.label.casefold()
            if label == needle:
                hits.append(SearchHit(node, "label", 0))
            elif label.startswith(needle):
                hits.append(SearchHit(node, "label", 1))
            elif needle in label:
                hits.append(SearchHit(node, "label", 2))
            else:
                path = _data_match(node.data, needle)
                if path is not None:
                    hits.append(SearchHit(node, "data", 3, path))
        hits.sort(key=lambda h: h.rank)  # stable: insertion order within a rank
        return hits

    # -- state ---------------------------------------------------------------

    @synced
    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "nodes": [n.to_dict() for n in self.nodes.values()],
            "edges": [e.to_dict() for e in self.edges.values()],
            "view": self.view(),
            "next_id": self._next_id,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, Mapping):
            raise GraphError("a graph state must be an object, as space_graph_get_state returns")
        unknown = set(state) - {"version", "nodes", "edges", "view", "next_id"}
        if unknown:
            raise GraphError(f"graph state has unknown field(s) {sorted(unknown)}")
        if state.get("version", STATE_VERSION) != STATE_VERSION:
            raise GraphError(
                f"graph state version {state.get('version')!r} is not supported; "
                f"expected {STATE_VERSION}"
            )
        for i, raw in enumerate(_list(state, "nodes")):
            where = f"nodes[{i}]"
            _fields(raw, where, required={"id", "label"}, optional={"kind", "data"})
            node_id = _state_id(raw["id"], where)
            if node_id in self.nodes:
                raise GraphError(f"graph state {where}: node id {node_id!r} appears twice")
            kind = raw.get("kind", "node")
            if kind not in NODE_KINDS:
                raise GraphError(f"graph state {where}: kind {kind!r} must be node or identity")
            try:
                node = Node(node_id, _label(raw["label"]), kind, _data(raw.get("data")))
            except GraphError as exc:
                raise GraphError(f"graph state {where}: {exc}") from None
            self.nodes[node_id] = node
        seen: set[tuple[str, str, str | None]] = set()
        for i, raw in enumerate(_list(state, "edges")):
            where = f"edges[{i}]"
            _fields(raw, where, required={"id", "source", "target"}, optional={"label"})
            edge_id = _state_id(raw["id"], where)
            if edge_id in self.edges:
                raise GraphError(f"graph state {where}: edge id {edge_id!r} appears twice")
            source, target, label = raw["source"], raw["target"], raw.get("label")
            for end in (source, target):
                if not isinstance(end, str) or end not in self.nodes:
                    raise GraphError(f"graph state {where}: edge refers to unknown node {end!r}")
            if source == target:
                raise GraphError(f"graph state {where}: edge joins node {source!r} to itself")
            if label is not None and not isinstance(label, str):
                raise GraphError(f"graph state {where}: label must be a string or null")
            if (source, target, label) in seen:
                raise GraphError(f"graph state {where}: duplicate edge {source!r} -> {target!r}")
            seen.add((source, target, label))
            self.edges[edge_id] = Edge(edge_id, source, target, label)
        view = state.get("view", {})
        _fields(view, "view", required=set(), optional={"focused", "open"})
        focused = view.get("focused")
        opened = view.get("open", [])
        if (
            not isinstance(opened, list)
            or not all(isinstance(i, str) for i in opened)
            or len(set(opened)) != len(opened)
        ):
            raise GraphError("graph state view.open must be a list of distinct node ids")
        if focused is not None and not isinstance(focused, str):
            raise GraphError("graph state view.focused must be a node id or null")
        for node_id in [*opened, *([focused] if focused is not None else [])]:
            if node_id not in self.nodes:
                raise GraphError(f"graph state view refers to unknown node {node_id!r}")
        self.focused, self.open = focused, list(opened)
        next_id = state.get("next_id", 1)
        if not isinstance(next_id, int) or isinstance(next_id, bool) or next_id < 1:
            raise GraphError("graph state next_id must be a positive integer")
        self._next_id = next_id

    def _new_id(self, prefix: str) -> str:
        # Caller-chosen ids (load_node) may take a generated name; skip those.
        while True:
            candidate = f"{prefix}{self._next_id}"
            self._next_id += 1
            if candidate not in self.nodes and candidate not in self.edges:
                return candidate


# -- validation helpers --------------------------------------------------------


def _check_id(node_id: str) -> None:
    if not isinstance(node_id, str) or not ID_RE.match(node_id):
        raise GraphError(
            f"node id {node_id!r} must be 1-128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )


def _state_id(value: object, where: str) -> str:
    if not isinstance(value, str) or not ID_RE.match(value):
        raise GraphError(f"graph state {where}: id {value!r} is not a valid id")
    return value


def _label(label: object) -> str:
    if not isinstance(label, str) or not label.strip():
        raise GraphError("a label must be a non-empty string")
    label = label.strip()
    if len(label) > MAX_LABEL:
        raise GraphError(f"a label may have at most {MAX_LABEL} characters; shorten it")
    return label


def _data(data: object) -> dict[str, Any]:
    """A deep copy of ``data``, which must be a JSON object of finite values."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise GraphError("data must be a JSON object")
    try:
        text = json.dumps(dict(data), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise GraphError(f"data must be plain JSON ({exc})") from None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _list(state: Mapping[str, Any], key: str) -> list[Any]:
    value = state.get(key, [])
    if not isinstance(value, list):
        raise GraphError(f"graph state {key} must be a list")
    return value


def _fields(raw: object, where: str, *, required: set[str], optional: set[str]) -> None:
    if not isinstance(raw, Mapping):
        raise GraphError(f"graph state {where} must be an object")
    missing = required - set(raw)
    if missing:
        raise GraphError(f"graph state {where} lacks {', '.join(sorted(missing))}")
    unknown = set(raw) - required - optional
    if unknown:
        raise GraphError(f"graph state {where} has unknown field(s) {sorted(unknown)}")


def _data_match(data: Any, needle: str) -> str | None:
    """The path of the first key or scalar value in ``data`` containing ``needle``."""
    for path, text in _walk(data, ""):
        if needle in text.casefold():
            return path
    return None


def _walk(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            yield child, str(key)
            yield from _walk(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")
    elif isinstance(value, bool) or value is None:
        yield path, json.dumps(value)
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        yield path, str(int(value))
    else:
        yield path, str(value)
