"""The graph tools: MCP adapters over the current world's ``Graph``.

Each handler fetches ``app.graph`` when it runs (the headless host resolves
it to the current world's graph) and turns a ``GraphError`` into a
``ToolCallError`` the model reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from agent_presets import (
    ToolAdapter,
    object_schema,
    runtime_handler,
)
from agent_presets_graph.model import ID_PATTERN, MAX_LABEL, Graph, GraphError

Handler = Callable[[Any, dict[str, Any]], Any]

READ_ONLY = {"readOnlyHint": True}
NODE_ID = {"type": "string", "pattern": ID_PATTERN, "description": "A node id, like 'n3'."}
LABEL = {"type": "string", "minLength": 1, "maxLength": MAX_LABEL}
DATA = {
    "type": "object",
    "description": "Free-form JSON properties of the node (strings, numbers, lists, objects).",
}


def _tool(mcp_name: str) -> Callable[[Callable[[Any, dict[str, Any]], Any]], Handler]:
    """Decorate a ``(graph, arguments)`` function as a handler that finds the graph at call time."""
    return functools.partial(runtime_handler, "graph", mcp_name, errors=(GraphError,))


@_tool("space_graph_add_node")
def add_node(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.add_node(args["label"], args.get("data")).to_dict()


@_tool("space_graph_load_node")
def load_node(graph: Graph, args: dict[str, Any]) -> Any:
    node, created = graph.load_node(
        args["id"], label=args.get("label"), data=args.get("data"), merge=args.get("merge", True)
    )
    return {"created": created, **graph.neighbourhood(node.id)}


@_tool("space_graph_remove_nodes")
def remove_nodes(graph: Graph, args: dict[str, Any]) -> Any:
    nodes, edges = graph.remove_nodes(args["ids"])
    return {"removed_nodes": nodes, "removed_edges": edges, "view": graph.view()}


@_tool("space_graph_add_edge")
def add_edge(graph: Graph, args: dict[str, Any]) -> Any:
    edge, created = graph.add_edge(args["source"], args["target"], args.get("label"))
    return {"created": created, **edge.to_dict()}


@_tool("space_graph_focus_node")
def focus_node(graph: Graph, args: dict[str, Any]) -> Any:
    graph.focus_node(args["id"])
    return {"view": graph.view(), **graph.neighbourhood(args["id"])}


@_tool("space_graph_open_node")
def open_node(graph: Graph, args: dict[str, Any]) -> Any:
    graph.open_node(args["id"])
    return {"view": graph.view(), **graph.neighbourhood(args["id"])}


@_tool("space_graph_search_nodes")
def search_nodes(graph: Graph, args: dict[str, Any]) -> Any:
    hits = graph.search(args["query"], kind=args.get("kind"))
    limit = args.get("limit", 20)
    return {
        "query": args["query"],
        "total": len(hits),
        "results": [h.to_dict() for h in hits[:limit]],
    }


@_tool("space_graph_create_identity")
def create_identity(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.create_identity(args["name"], args.get("data")).to_dict()


@_tool("space_graph_get_state")
def get_state(graph: Graph, args: dict[str, Any]) -> Any:
    return graph.to_state()


@_tool("space_graph_restore_state")
def restore_state(graph: Graph, args: dict[str, Any]) -> Any:
    graph.restore(args["state"])
    return {"nodes": len(graph.nodes), "edges": len(graph.edges), "view": graph.view()}


def tool_adapters() -> list[ToolAdapter]:
    source = __package__ or "agent_presets_graph"
    return [
        ToolAdapter(
            "graph.add-node",
            "space_graph_add_node",
            "Add a node to the graph. Returns the new node with its generated id "
            "(use that id for edges, focus and open).",
            object_schema(
                {"label": {**LABEL, "description": "The text shown on the node."}, "data": DATA},
                ["label"],
            ),
            add_node,
            source=source,
        ),
        ToolAdapter(
            "graph.load-node",
            "space_graph_load_node",
            "Load a node by id into the view: returns it with its edges and neighbours. "
            "With 'data' the node's data is updated (merged key by key, or replaced when "
            "merge is false); with 'label' it is renamed. A node that does not exist yet "
            "is created with this id when 'label' is given (an upsert).",
            object_schema(
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
            load_node,
            source=source,
        ),
        ToolAdapter(
            "graph.remove-nodes",
            "space_graph_remove_nodes",
            "Delete nodes and every edge touching them. All ids must exist, otherwise "
            "nothing is deleted. This cannot be undone.",
            object_schema(
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
            remove_nodes,
            annotations={"destructiveHint": True},
            source=source,
        ),
        ToolAdapter(
            "graph.add-edge",
            "space_graph_add_edge",
            "Add a directed edge from 'source' to 'target' (both existing node ids), with "
            "an optional label such as 'knows'. Adding an edge that already exists returns "
            "the existing one with created: false.",
            object_schema(
                {
                    "source": NODE_ID,
                    "target": NODE_ID,
                    "label": {**LABEL, "description": "What the edge means, e.g. 'works at'."},
                },
                ["source", "target"],
            ),
            add_edge,
            annotations={"idempotentHint": True},
            source=source,
        ),
        ToolAdapter(
            "graph.focus-node",
            "space_graph_focus_node",
            "Focus a node in the graph view (it is opened too). Returns the view and the "
            "node with its edges and neighbours.",
            object_schema({"id": NODE_ID}, ["id"]),
            focus_node,
            annotations={"idempotentHint": True},
            source=source,
        ),
        ToolAdapter(
            "graph.open-node",
            "space_graph_open_node",
            "Open a node in the graph view without changing the focus. Returns the view "
            "and the node with its edges and neighbours.",
            object_schema({"id": NODE_ID}, ["id"]),
            open_node,
            annotations={"idempotentHint": True},
            source=source,
        ),
        ToolAdapter(
            "graph.search-nodes",
            "space_graph_search_nodes",
            "Search nodes by text, case-insensitively. Label matches come first (exact, "
            "then prefix, then substring), then matches in node data (keys or values; "
            "'path' says where). Returns ids to use with the other graph tools.",
            object_schema(
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
            search_nodes,
            annotations=READ_ONLY,
            source=source,
        ),
        ToolAdapter(
            "graph.create-identity",
            "space_graph_create_identity",
            "Create an identity node: a node (kind 'identity') that stands for one person, "
            "organisation or other entity. Names are unique among identities "
            "(case-insensitive); link other nodes to it with space_graph_add_edge.",
            object_schema(
                {
                    "name": {**LABEL, "description": "The identity's name, e.g. 'Ada Lovelace'."},
                    "data": {**DATA, "description": 'Facts about it, e.g. {"email": ...}.'},
                },
                ["name"],
            ),
            create_identity,
            source=source,
        ),
        ToolAdapter(
            "graph.get-state",
            "space_graph_get_state",
            "Return the whole graph as JSON (nodes, edges, view), suitable for "
            "space_graph_restore_state.",
            object_schema({}, []),
            get_state,
            annotations=READ_ONLY,
            source=source,
        ),
        ToolAdapter(
            "graph.restore-state",
            "space_graph_restore_state",
            "Replace the whole graph with a state from space_graph_get_state. The state is "
            "checked first; an invalid one changes nothing. Everything not in it is lost.",
            object_schema(
                {
                    "state": {
                        "type": "object",
                        "description": "A graph state exactly as space_graph_get_state returns.",
                    }
                },
                ["state"],
            ),
            restore_state,
            annotations={"destructiveHint": True},
            source=source,
        ),
    ]
