"""The graph tools: MCP adapters over the current world's ``Graph``.

Each tool is ``KIT.adapter`` (the plugin's ``AdapterKit``) over one
``(graph, arguments)`` function named after it (``add_node`` does
``graph.add-node``): the core fetches ``app.graph`` when the tool runs (the
headless host resolves it to the current world's graph) and turns a
``GraphError`` into a ``ToolCallError`` the model reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import AdapterKit, ToolAdapter, object_schema, result_schema
from agent_presets_graph.terms import ID_PATTERN, MAX_LABEL, NODE_KINDS, GraphError

if TYPE_CHECKING:
    from agent_presets_graph.model import Graph

KIT = AdapterKit("graph", errors=(GraphError,))

READ_ONLY = {"readOnlyHint": True}
NODE_ID = {"type": "string", "pattern": ID_PATTERN, "description": "A node id, like 'n3'."}
LABEL = {"type": "string", "minLength": 1, "maxLength": MAX_LABEL}
DATA = {
    "type": "object",
    "description": "Free-form JSON properties of the node (strings, numbers, lists, objects).",
}


def add_node(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.add_node(args["label"], args.get("data")).to_dict()


def load_node(graph: Graph, args: dict[str, Any]) -> Any:
    node, created = graph.load_node(
        args["id"], label=args.get("label"), data=args.get("data"), merge=args.get("merge", True)
    )
    return {"created": created, **graph.neighbourhood(node.id)}


def remove_nodes(graph: Graph, args: dict[str, Any]) -> Any:
    nodes, edges = graph.remove_nodes(args["ids"])
    return {"removed_nodes": nodes, "removed_edges": edges, "view": graph.view()}


def add_edge(graph: Graph, args: dict[str, Any]) -> Any:
    edge, created = graph.add_edge(args["source"], args["target"], args.get("label"))
    return {"created": created, **edge.to_dict()}


def focus_node(graph: Graph, args: dict[str, Any]) -> Any:
    graph.focus_node(args["id"])
    return {"view": graph.view(), **graph.neighbourhood(args["id"])}


def open_node(graph: Graph, args: dict[str, Any]) -> Any:
    graph.open_node(args["id"])
    return {"view": graph.view(), **graph.neighbourhood(args["id"])}


def search_nodes(graph: Graph, args: dict[str, Any]) -> Any:
    hits = graph.search(args["query"], kind=args.get("kind"))
    limit = args.get("limit", 20)
    return {
        "query": args["query"],
        "total": len(hits),
        "results": [h.to_dict() for h in hits[:limit]],
    }


def create_identity(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.create_identity(args["name"], args.get("data")).to_dict()


def get_state(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.to_state()


def restore_state(graph: Graph, args: dict[str, Any]) -> Any:
    graph.restore(args["state"])
    return {"nodes": len(graph.nodes), "edges": len(graph.edges), "view": graph.view()}


# What each tool returns (its structuredContent), as the graph's methods build it.
TEXT: dict[str, Any] = {"type": "string"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
IDS: dict[str, Any] = {"type": "array", "items": TEXT}
KIND: dict[str, Any] = {"enum": list(NODE_KINDS)}
NODE_OUT = result_schema({"id": TEXT, "label": TEXT, "kind": KIND, "data": {"type": "object"}})
EDGE_OUT = result_schema(
    {"id": TEXT, "source": TEXT, "target": TEXT, "label": {"type": ["string", "null"]}}
)
VIEW_OUT = result_schema({"focused": {"type": ["string", "null"]}, "open": IDS})
NEIGHBOURHOOD: dict[str, Any] = {
    "node": NODE_OUT,
    "edges": {"type": "array", "items": EDGE_OUT},
    "neighbours": {
        "type": "array",
        "items": result_schema({"id": TEXT, "label": TEXT, "kind": KIND}),
    },
}
LOAD_OUTPUT = result_schema({"created": {"type": "boolean"}, **NEIGHBOURHOOD})
REMOVE_OUTPUT = result_schema({"removed_nodes": IDS, "removed_edges": IDS, "view": VIEW_OUT})
ADD_EDGE_OUTPUT = result_schema({"created": {"type": "boolean"}, **EDGE_OUT["properties"]})
VIEW_OUTPUT = result_schema({"view": VIEW_OUT, **NEIGHBOURHOOD})
SEARCH_OUTPUT = result_schema(
    {
        "query": TEXT,
        "total": COUNT,
        "results": {
            "type": "array",
            "items": result_schema(
                {
                    "id": TEXT,
                    "label": TEXT,
                    "kind": KIND,
                    "match": {"enum": ["label", "data"]},
                    "path": {**TEXT, "description": "Where in the data it matched."},
                },
                ["path"],
            ),
        },
    }
)
STATE_OUTPUT = result_schema(
    {
        "version": {"type": "integer"},
        "nodes": {"type": "array", "items": NODE_OUT},
        "edges": {"type": "array", "items": EDGE_OUT},
        "view": VIEW_OUT,
        "next_id": {"type": "integer", "minimum": 1},
    }
)
RESTORE_OUTPUT = result_schema({"nodes": COUNT, "edges": COUNT, "view": VIEW_OUT})


def tool_adapters() -> list[ToolAdapter]:
    source = __package__ or "agent_presets_graph"
    return [
        KIT.adapter(
            add_node,
            title="Add a node",
            output_schema=NODE_OUT,
            description=(
                "Add a node to the graph. Returns the new node with its generated id "
                "(use that id for edges, focus and open)."
            ),
            input_schema=object_schema(
                {"label": {**LABEL, "description": "The text shown on the node."}, "data": DATA},
                ["label"],
            ),
            source=source,
        ),
        KIT.adapter(
            load_node,
            title="Load a node",
            output_schema=LOAD_OUTPUT,
            description=(
                "Load a node by id into the view: returns it with its edges and neighbours. "
                "With 'data' the node's data is updated (merged key by key, or replaced when "
                "merge is false); with 'label' it is renamed. A node that does not exist yet "
                "is created with this id when 'label' is given (an upsert)."
            ),
            input_schema=object_schema(
                {
                    "id": NODE_ID,
                    "label": {**LABEL, "description": "New label; required to create a node."},
                    "data": DATA,
                    "merge": {
                        "type": "boolean",
                        "default": True,
                        "description": "true: merge 'data' into the existing data; "
                        "false: replace it.",
                    },
                },
                ["id"],
            ),
            source=source,
        ),
        KIT.adapter(
            remove_nodes,
            title="Remove nodes",
            output_schema=REMOVE_OUTPUT,
            description=(
                "Delete nodes and every edge touching them. All ids must exist, otherwise "
                "nothing is deleted. This cannot be undone."
            ),
            input_schema=object_schema(
                {
                    "ids": {
                        "type": "array",
                        "items": NODE_ID,
                        "minItems": 1,
                        "maxItems": 1000,
                        "uniqueItems": True,
                        "description": "Ids of the nodes to delete.",
                    }
                },
                ["ids"],
            ),
            annotations={"destructiveHint": True},
            source=source,
        ),
        KIT.adapter(
            add_edge,
            title="Add an edge",
            output_schema=ADD_EDGE_OUTPUT,
            description=(
                "Add a directed edge from 'source' to 'target' (both existing node ids), with "
                "an optional label such as 'knows'. Adding an edge that already exists returns "
                "the existing one with created: false."
            ),
            input_schema=object_schema(
                {
                    "source": NODE_ID,
                    "target": NODE_ID,
                    "label": {**LABEL, "description": "What the edge means, e.g. 'works at'."},
                },
                ["source", "target"],
            ),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            focus_node,
            title="Focus a node",
            output_schema=VIEW_OUTPUT,
            description=(
                "Focus a node in the graph view (it is opened too). Returns the view and the "
                "node with its edges and neighbours."
            ),
            input_schema=object_schema({"id": NODE_ID}, ["id"]),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            open_node,
            title="Open a node",
            output_schema=VIEW_OUTPUT,
            description=(
                "Open a node in the graph view without changing the focus. Returns the view "
                "and the node with its edges and neighbours."
            ),
            input_schema=object_schema({"id": NODE_ID}, ["id"]),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            search_nodes,
            title="Search nodes",
            output_schema=SEARCH_OUTPUT,
            description=(
                "Search nodes by text, case-insensitively. Label matches come first (exact, "
                "then prefix, then substring), then matches in node data (keys or values; "
                "'path' says where). Returns ids to use with the other graph tools."
            ),
            input_schema=object_schema(
                {
                    "query": {"type": "string", "minLength": 1, "maxLength": 200},
                    "kind": {
                        "enum": ["node", "identity"],
                        "description": "Only nodes of this kind.",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                },
                ["query"],
            ),
            annotations=READ_ONLY,
            source=source,
        ),
        KIT.adapter(
            create_identity,
            title="Create an identity",
            output_schema=NODE_OUT,
            description=(
                "Create an identity node: a node (kind 'identity') that stands for one person, "
                "organisation or other entity. Names are unique among identities "
                "(case-insensitive); link other nodes to it with {{graph.add-edge}}."
            ),
            input_schema=object_schema(
                {
                    "name": {**LABEL, "description": "The identity's name, e.g. 'Ada Lovelace'."},
                    "data": {**DATA, "description": 'Facts about it, e.g. {"email": ...}.'},
                },
                ["name"],
            ),
            source=source,
        ),
        KIT.adapter(
            get_state,
            title="View the graph",
            output_schema=STATE_OUTPUT,
            description=(
                "Return the whole graph as JSON (nodes, edges, view), suitable for "
                "{{graph.restore-state}}."
            ),
            input_schema=object_schema({}, []),
            annotations=READ_ONLY,
            source=source,
        ),
        KIT.adapter(
            restore_state,
            title="Restore the graph",
            output_schema=RESTORE_OUTPUT,
            description=(
                "Replace the whole graph with a state from {{graph.get-state}}. The state is "
                "checked first; an invalid one changes nothing. Everything not in it is lost."
            ),
            input_schema=object_schema(
                {
                    "state": {
                        "type": "object",
                        "description": "A graph state exactly as space_graph_get_state returns.",
                    }
                },
                ["state"],
            ),
            annotations={"destructiveHint": True},
            source=source,
        ),
    ]
