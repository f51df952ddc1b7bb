"""The drawing tools: one ``ToolAdapter`` per MCP tool in the spec's Drawing table.

Each tool comes from ``KIT``, the plugin's ``AdapterKit`` over ``app.drawing``, and an
action named after it (``set_tool`` does ``drawing.set-tool``): the core fetches
the current world's drawing when the tool runs, the action calls one method on
it, and a ``DrawingError`` becomes a ``ToolCallError`` the model can act on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_presets import AdapterKit, ToolAdapter, object_schema, result_schema
from agent_presets_drawing.terms import MATCH_MODES, OPEN_KINDS, SHAPES, TOOLS, DrawingError

if TYPE_CHECKING:
    from agent_presets_drawing.document import Drawing

KIT = AdapterKit("drawing", errors=(DrawingError,))

# ------------------------------------------------------------------ schemas

NUMBER: dict[str, Any] = {"type": "number"}
COLOR: dict[str, Any] = {
    "type": "string",
    "pattern": "^(none|#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6})$",
    "description": "'#rrggbb', '#rgb', or 'none' for no paint.",
}
WIDTH: dict[str, Any] = {
    "type": "number",
    "minimum": 0,
    "description": "Stroke width in drawing units (0 draws no outline).",
}
POINT: dict[str, Any] = {
    "type": "array",
    "items": NUMBER,
    "minItems": 2,
    "maxItems": 2,
    "description": "An [x, y] pair.",
}
LAYER: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "description": "A layer id (like 'layer-2') or its exact name.",
}
LAYER_NAME: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "description": "A layer name, unique in the drawing.",
}


def _style(*, fill: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {"stroke": COLOR, "width": WIDTH}
    if fill:
        properties = {"fill": COLOR, **properties}
    return {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "description": "Style for this object; keys left out come from the drawing's defaults.",
    }


STYLE_CHANGE = object_schema(
    {
        "fill": {**COLOR, "description": "Fill colour: '#rrggbb', '#rgb' or 'none'."},
        "stroke": {**COLOR, "description": "Outline colour: '#rrggbb', '#rgb' or 'none'."},
        "width": WIDTH,
    },
    minProperties=1,
)

# ------------------------------------------------------------------ actions


def inspect(d: Drawing, a: dict[str, Any]) -> Any:
    result = d.inspect()
    if a.get("include_svg"):
        result["svg"] = d.to_svg()
    return result


def insert_shape(d: Drawing, a: dict[str, Any]) -> Any:
    return d.insert_shape(
        a["shape"],
        a.get("x"),
        a.get("y"),
        a.get("width"),
        a.get("height"),
        points=a.get("points"),
        rotation=a.get("rotation", 0.0),
        style=a.get("style"),
        layer=a.get("layer"),
    )


def select(d: Drawing, a: dict[str, Any]) -> Any:
    return d.select(
        a.get("ids"),
        a.get("rect"),
        match=a.get("match", "intersects"),
        extend=a.get("extend", False),
        layer=a.get("layer"),
    )


def transform_selection(d: Drawing, a: dict[str, Any]) -> Any:
    moves = {k: a[k] for k in ("dx", "dy", "sx", "sy", "degrees") if k in a}
    if not moves:
        raise DrawingError("say how to transform: dx/dy to move, sx/sy to scale, degrees to rotate")
    origin = (a["origin"]["x"], a["origin"]["y"]) if "origin" in a else None
    return d.transform_selection(**moves, origin=origin)


def set_tool(d: Drawing, a: dict[str, Any]) -> Any:
    return d.set_tool(a["tool"])


def insert_line(d: Drawing, a: dict[str, Any]) -> Any:
    return d.insert_line(
        a["x1"], a["y1"], a["x2"], a["y2"], style=a.get("style"), layer=a.get("layer")
    )


def insert_stroke(d: Drawing, a: dict[str, Any]) -> Any:
    return d.insert_stroke(a["points"], style=a.get("style"), layer=a.get("layer"))


def add_layer(d: Drawing, a: dict[str, Any]) -> Any:
    return d.add_layer(a.get("name"))


def duplicate_layer(d: Drawing, a: dict[str, Any]) -> Any:
    return d.duplicate_layer(a.get("layer"), a.get("name"))


def rename_layer(d: Drawing, a: dict[str, Any]) -> Any:
    return d.rename_layer(a["layer"], a["name"])


def set_active_layer(d: Drawing, a: dict[str, Any]) -> Any:
    return d.set_active_layer(a["layer"])


def delete_layer(d: Drawing, a: dict[str, Any]) -> Any:
    return d.delete_layer(a["layer"])


def set_defaults(d: Drawing, a: dict[str, Any]) -> Any:
    return d.set_defaults(a.get("fill"), a.get("stroke"), a.get("width"))


def update_selection_style(d: Drawing, a: dict[str, Any]) -> Any:
    return d.update_selection_style(a.get("fill"), a.get("stroke"), a.get("width"))


def sample_color(d: Drawing, a: dict[str, Any]) -> Any:
    return d.sample_color(a["x"], a["y"])


def undo(d: Drawing, a: dict[str, Any]) -> Any:
    return d.undo()


def redo(d: Drawing, a: dict[str, Any]) -> Any:
    return d.redo()


def clear_selection(d: Drawing, a: dict[str, Any]) -> Any:
    return d.clear_selection()


def delete_selected(d: Drawing, a: dict[str, Any]) -> Any:
    return d.delete_selected()


READ_ONLY = {"readOnlyHint": True}
DESTRUCTIVE = {"destructiveHint": True}

# ------------------------------------------------------------------ results
# What each tool returns (its structuredContent), as the drawing's methods build it.

TEXT: dict[str, Any] = {"type": "string"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
IDS: dict[str, Any] = {"type": "array", "items": TEXT}
PAINT: dict[str, Any] = {"type": "string", "description": "'#rrggbb' or 'none'."}
NO_FILL = "Lines and strokes have no fill."
BOX_OUT = result_schema({"x": NUMBER, "y": NUMBER, "width": NUMBER, "height": NUMBER})
DEFAULTS_OUT = result_schema({"fill": PAINT, "stroke": PAINT, "width": NUMBER})
STYLE_OUT = result_schema(DEFAULTS_OUT["properties"], ["fill"], description=NO_FILL)
OBJECT_OUT = result_schema(
    {
        "id": TEXT,
        "kind": {"enum": [*SHAPES, *OPEN_KINDS]},
        "x": NUMBER,
        "y": NUMBER,
        "width": NUMBER,
        "height": NUMBER,
        "rotation": NUMBER,
        "points": {"type": "array", "items": POINT, "minItems": 2},
        "style": STYLE_OUT,
        "bounds": BOX_OUT,
    },
    ["x", "y", "width", "height", "rotation", "points", "bounds"],
    # A box shape is placed by its box, the others by their points.
    allOf=[
        {
            "if": {"properties": {"kind": {"enum": ["rect", "ellipse"]}}, "required": ["kind"]},
            "then": {"required": ["x", "y", "width", "height", "rotation"]},
            "else": {"required": ["points"]},
        }
    ],
)
BOUNDED_OBJECT = {**OBJECT_OUT, "required": [*OBJECT_OUT["required"], "bounds"]}
LAYER_REF_OUT = result_schema({"id": TEXT, "name": TEXT})
LAYER_OUT = result_schema(
    {"id": TEXT, "name": TEXT, "objects": {"type": "array", "items": OBJECT_OUT}}
)
DEPTHS: dict[str, Any] = {"undo_depth": COUNT, "redo_depth": COUNT}
INSPECT_OUTPUT = result_schema(
    {
        "width": NUMBER,
        "height": NUMBER,
        "background": TEXT,
        "layers": {
            "type": "array",
            "items": result_schema(
                {"id": TEXT, "name": TEXT, "objects": {"type": "array", "items": BOUNDED_OBJECT}}
            ),
            "minItems": 1,
        },
        "active_layer": TEXT,
        "selection": IDS,
        "tool": {"enum": list(TOOLS)},
        "defaults": DEFAULTS_OUT,
        **DEPTHS,
        "next_undo": {"type": ["string", "null"]},
        "next_redo": {"type": ["string", "null"]},
        "svg": TEXT,
    },
    ["svg"],
)
SET_TOOL_OUTPUT = result_schema({"tool": {"enum": list(TOOLS)}, "previous": {"enum": list(TOOLS)}})
INSERT_OUTPUT = result_schema(
    {
        "id": TEXT,
        "layer": TEXT,
        "object": OBJECT_OUT,
        "bounds": BOX_OUT,
        "warning": {**TEXT, "description": "Set when the new object is invisible."},
    },
    ["warning"],
)
ADD_LAYER_OUTPUT = result_schema({"layer": LAYER_OUT, "position": COUNT})
DUPLICATE_LAYER_OUTPUT = result_schema({"layer": LAYER_OUT, "position": COUNT, "source": TEXT})
RENAME_LAYER_OUTPUT = result_schema({"layer": LAYER_REF_OUT})
ACTIVE_LAYER_OUTPUT = result_schema({"active_layer": TEXT, "name": TEXT})
DELETE_LAYER_OUTPUT = result_schema(
    {"deleted": TEXT, "objects_deleted": COUNT, "active_layer": TEXT}
)
DEFAULTS_OUTPUT = result_schema({"defaults": DEFAULTS_OUT})
RESTYLE_OUTPUT = result_schema(
    {
        "updated": IDS,
        "styles": {"type": "object", "additionalProperties": STYLE_OUT},
        "fill_skipped": {**IDS, "description": "Lines and strokes, which kept no fill."},
    },
    ["fill_skipped"],
)
SAMPLE_OUTPUT = result_schema(
    {
        "color": PAINT,
        "part": {"enum": ["fill", "stroke", "background"]},
        "object_id": {"type": ["string", "null"]},
        "layer": {"type": ["string", "null"]},
    }
)
UNDO_OUTPUT = result_schema({"undone": TEXT, **DEPTHS})
REDO_OUTPUT = result_schema({"redone": TEXT, **DEPTHS})
SELECT_OUTPUT = result_schema(
    {
        "selection": IDS,
        "count": COUNT,
        "bounds": {**BOX_OUT, "description": "Around the selection; absent when it is empty."},
    },
    ["bounds"],
)
TRANSFORM_OUTPUT = result_schema(
    {
        "objects": {"type": "array", "items": OBJECT_OUT},
        "bounds": BOX_OUT,
        "origin": result_schema({"x": NUMBER, "y": NUMBER}),
    }
)
CLEAR_SELECTION_OUTPUT = result_schema({"selection": {**IDS, "maxItems": 0}, "cleared": IDS})
DELETE_SELECTED_OUTPUT = result_schema({"deleted": IDS, "count": COUNT})


def tool_adapters() -> list[ToolAdapter]:
    return [
        KIT.adapter(
            inspect,
            title="Inspect the drawing",
            output_schema=INSPECT_OUTPUT,
            description=(
                "Read the whole drawing as JSON: layers bottom to top with their objects (id, "
                "kind, geometry, style, bounding box), the active layer, the selected object ids, "
                "the current tool, the default style, and how many steps can be undone or redone. "
                "Set include_svg to also get the drawing rendered as SVG."
            ),
            input_schema=object_schema({"include_svg": {"type": "boolean", "default": False}}),
            annotations=READ_ONLY,
        ),
        KIT.adapter(
            set_tool,
            title="Set the drawing tool",
            output_schema=SET_TOOL_OUTPUT,
            description="Switch the active drawing tool the user sees in the toolbar.",
            input_schema=object_schema(
                {"tool": {"enum": list(TOOLS), "description": "The tool to make current."}},
                ["tool"],
            ),
        ),
        KIT.adapter(
            insert_shape,
            title="Insert a shape",
            output_schema=INSERT_OUTPUT,
            description=(
                "Add a shape to the drawing and return its id and the stored object. A rect or "
                "ellipse fills the box x, y (top-left), width, height, optionally turned clockwise "
                "by rotation degrees about its centre; a polygon takes its corner points instead "
                "of a box. The shape goes on top of the given layer (default: the active layer) "
                "with the default style, overridden by any style keys you give."
            ),
            input_schema=object_schema(
                {
                    "shape": {"enum": list(SHAPES)},
                    "x": {**NUMBER, "description": "Left edge of the box (rect, ellipse)."},
                    "y": {**NUMBER, "description": "Top edge of the box (rect, ellipse)."},
                    "width": {"type": "number", "exclusiveMinimum": 0},
                    "height": {"type": "number", "exclusiveMinimum": 0},
                    "rotation": {**NUMBER, "description": "Degrees clockwise (rect, ellipse)."},
                    "points": {
                        "type": "array",
                        "items": POINT,
                        "minItems": 3,
                        "description": "Polygon corners in order, at least 3 [x, y] pairs.",
                    },
                    "style": _style(fill=True),
                    "layer": LAYER,
                },
                ["shape"],
                allOf=[
                    {
                        "if": {
                            "properties": {"shape": {"enum": ["rect", "ellipse"]}},
                            "required": ["shape"],
                        },
                        "then": {"required": ["x", "y", "width", "height"]},
                    },
                    {
                        "if": {
                            "properties": {"shape": {"const": "polygon"}},
                            "required": ["shape"],
                        },
                        "then": {"required": ["points"]},
                    },
                ],
            ),
        ),
        KIT.adapter(
            insert_line,
            title="Insert a line",
            output_schema=INSERT_OUTPUT,
            description=(
                "Add a straight line from (x1, y1) to (x2, y2) and return its id and the stored "
                "object. Lines have a stroke colour and width but no fill."
            ),
            input_schema=object_schema(
                {
                    "x1": NUMBER,
                    "y1": NUMBER,
                    "x2": NUMBER,
                    "y2": NUMBER,
                    "style": _style(fill=False),
                    "layer": LAYER,
                },
                ["x1", "y1", "x2", "y2"],
            ),
        ),
        KIT.adapter(
            insert_stroke,
            title="Insert a stroke",
            output_schema=INSERT_OUTPUT,
            description=(
                "Add a freehand stroke: an open path through points in drawing order, with round "
                "caps and joins. Returns its id and the stored object. Strokes have no fill."
            ),
            input_schema=object_schema(
                {
                    "points": {
                        "type": "array",
                        "items": POINT,
                        "minItems": 2,
                        "description": "The path, at least 2 [x, y] pairs.",
                    },
                    "style": _style(fill=False),
                    "layer": LAYER,
                },
                ["points"],
            ),
        ),
        KIT.adapter(
            add_layer,
            title="Add a layer",
            output_schema=ADD_LAYER_OUTPUT,
            description=(
                "Add an empty layer just above the active layer and make it active. Without a name "
                "it is called 'Layer N'."
            ),
            input_schema=object_schema({"name": LAYER_NAME}),
        ),
        KIT.adapter(
            duplicate_layer,
            title="Duplicate a layer",
            output_schema=DUPLICATE_LAYER_OUTPUT,
            description=(
                "Copy a layer (default: the active one) with all its objects, which get new ids. "
                "The copy goes just above the original and becomes active; without a name it is "
                "called '<name> copy'."
            ),
            input_schema=object_schema({"layer": LAYER, "name": LAYER_NAME}),
        ),
        KIT.adapter(
            rename_layer,
            title="Rename a layer",
            output_schema=RENAME_LAYER_OUTPUT,
            description="Rename a layer. Names are unique within the drawing.",
            input_schema=object_schema({"layer": LAYER, "name": LAYER_NAME}, ["layer", "name"]),
        ),
        KIT.adapter(
            set_active_layer,
            title="Set the active layer",
            output_schema=ACTIVE_LAYER_OUTPUT,
            description="Make a layer the active one: new objects are inserted on it.",
            input_schema=object_schema({"layer": LAYER}, ["layer"]),
        ),
        KIT.adapter(
            delete_layer,
            title="Delete a layer",
            output_schema=DELETE_LAYER_OUTPUT,
            description=(
                "Delete a layer and every object on it. The last remaining layer cannot be "
                "deleted. {{drawing.undo}} restores it."
            ),
            input_schema=object_schema({"layer": LAYER}, ["layer"]),
            annotations=DESTRUCTIVE,
        ),
        KIT.adapter(
            set_defaults,
            title="Set the default style",
            output_schema=DEFAULTS_OUTPUT,
            description=(
                "Change the default style that new objects get: fill colour, stroke colour and "
                "stroke width. Existing objects keep their style (use "
                "{{drawing.update-selection-style}})."
            ),
            input_schema=STYLE_CHANGE,
        ),
        KIT.adapter(
            update_selection_style,
            title="Restyle the selection",
            output_schema=RESTYLE_OUTPUT,
            description=(
                "Restyle the selected objects: set any of fill colour, stroke colour and stroke "
                "width. Lines and strokes have no fill and keep none."
            ),
            input_schema=STYLE_CHANGE,
        ),
        KIT.adapter(
            sample_color,
            title="Sample a color",
            output_schema=SAMPLE_OUTPUT,
            description=(
                "Report the colour painted at point (x, y), like an eyedropper: the stroke or fill "
                "of the topmost object covering that point (a stroke covers width/2 either side of "
                "its outline; 'none' paint lets lower objects show), or the background colour."
            ),
            input_schema=object_schema({"x": NUMBER, "y": NUMBER}, ["x", "y"]),
            annotations=READ_ONLY,
        ),
        KIT.adapter(
            undo,
            title="Undo",
            output_schema=UNDO_OUTPUT,
            description="Undo the last change to the drawing and say what it was.",
            input_schema=object_schema(),
        ),
        KIT.adapter(
            redo,
            title="Redo",
            output_schema=REDO_OUTPUT,
            description="Redo the change most recently undone and say what it was.",
            input_schema=object_schema(),
        ),
        KIT.adapter(
            select,
            title="Select shapes",
            output_schema=SELECT_OUTPUT,
            description=(
                "Select objects: give either ids or rect (exactly one). A rectangle selects the "
                "objects whose bounding boxes intersect it (match: intersects, the default) or lie "
                "wholly inside it (match: inside), on every layer or only on the given layer. The "
                "new selection replaces the old one unless extend is true."
            ),
            input_schema=object_schema(
                {
                    "ids": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "description": "Object ids, like 'obj-3'.",
                    },
                    "rect": object_schema(
                        {
                            "x": NUMBER,
                            "y": NUMBER,
                            "width": {"type": "number", "minimum": 0},
                            "height": {"type": "number", "minimum": 0},
                        },
                        ["x", "y", "width", "height"],
                        description="Selection rectangle: top-left x, y and its size.",
                    ),
                    "match": {"enum": list(MATCH_MODES), "default": "intersects"},
                    "extend": {"type": "boolean", "default": False},
                    "layer": {**LAYER, "description": "Only select objects on this layer (rect)."},
                },
            ),
        ),
        KIT.adapter(
            transform_selection,
            title="Transform the selection",
            output_schema=TRANSFORM_OUTPUT,
            description=(
                "Transform the selected objects' geometry: first scale by sx/sy, then rotate by "
                "degrees (clockwise on screen), both about origin (default: the centre of the "
                "selection's bounding box), then move by dx/dy. Stroke widths are kept. A turned "
                "rectangle scaled unevenly becomes a 4-point polygon."
            ),
            input_schema=object_schema(
                {
                    "dx": NUMBER,
                    "dy": NUMBER,
                    "sx": {
                        **NUMBER,
                        "description": "Horizontal scale factor, not 0; negative mirrors.",
                    },
                    "sy": {
                        **NUMBER,
                        "description": "Vertical scale factor, not 0; negative mirrors.",
                    },
                    "degrees": NUMBER,
                    "origin": object_schema({"x": NUMBER, "y": NUMBER}, ["x", "y"]),
                }
            ),
        ),
        KIT.adapter(
            clear_selection,
            title="Clear the selection",
            output_schema=CLEAR_SELECTION_OUTPUT,
            description="Deselect everything.",
            input_schema=object_schema(),
        ),
        KIT.adapter(
            delete_selected,
            title="Delete the selection",
            output_schema=DELETE_SELECTED_OUTPUT,
            description="Delete the selected objects. {{drawing.undo}} brings them back.",
            input_schema=object_schema(),
            annotations=DESTRUCTIVE,
        ),
    ]
