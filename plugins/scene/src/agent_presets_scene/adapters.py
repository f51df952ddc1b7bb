"""The scene tools: MCP adapters over the current world's ``Scene``.

Each tool is ``KIT.adapter`` (the plugin's ``AdapterKit``) over one
``(scene, arguments)`` function named after it (``add_cuboid`` does
``scene.add-cuboid``): the core fetches ``app.scene`` when the tool runs (the
headless host resolves it to the current world's scene) and turns a
``SceneError`` into a ``ToolCallError`` the model reads.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from agent_presets import AdapterKit, ToolAdapter, ToolCall, object_schema, result_schema
from agent_presets_scene.errors import SceneError
from agent_presets_scene.terms import BODY_KINDS, LIGHT_KINDS, MAX_SAMPLES, MIN_SAMPLES, SKYBOXES
from agent_presets_scene.vectors import HEX_COLOR_PATTERN, rounded

if TYPE_CHECKING:
    from agent_presets_scene.model import Scene
    from agent_presets_scene.terrain import Heightfield

KIT = AdapterKit("scene", errors=(SceneError,))

READ_ONLY = {"readOnlyHint": True}


def _vector(description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "number"},
        "minItems": 3,
        "maxItems": 3,
        "description": description,
    }


COLOR = {
    "type": "string",
    "pattern": HEX_COLOR_PATTERN,
    "description": "Hex color, e.g. '#ff8800'.",
}
NAME = {"type": "string", "minLength": 1, "maxLength": 200}
ID = {"type": "string", "minLength": 1, "maxLength": 100}


def _terrain_summary(terrain: Heightfield) -> dict[str, Any]:
    lo, hi = terrain.bounds()
    return {
        "rows": terrain.rows,
        "cols": terrain.cols,
        "cell_size": terrain.cell_size,
        "origin": list(terrain.origin),
        "seed": terrain.seed,
        "bounds": {"min": rounded(lo), "max": rounded(hi)},
    }


def add_cuboid(scene: Scene, args: dict[str, Any]) -> Any:
    cuboid = scene.add_cuboid(
        args["position"], args["size"], name=args.get("name"), color=args.get("color")
    )
    return cuboid.to_dict()


def add_physics_body(scene: Scene, args: dict[str, Any]) -> Any:
    cuboid, replaced = scene.add_physics_body(args["object_id"], args["kind"], args.get("mass"))
    return {"replaced": replaced, **cuboid.to_dict()}


def select_object(scene: Scene, args: dict[str, Any]) -> Any:
    scene.select_object(args["object_id"])
    selected = scene.selected
    return {
        "selected": selected,
        "object": scene.get_object(selected).to_dict() if selected else None,
    }


def add_terrain(scene: Scene, args: dict[str, Any], call: ToolCall) -> Any:
    # Generating a large grid takes a while: the client hears each step (when it asked).
    progress = call.context.progress if call.context is not None else _no_progress
    layout = {"cell_size": args.get("cell_size", 1.0), "origin": args.get("origin", [0, 0, 0])}
    generated = {k: args[k] for k in ("seed", "rows", "cols", "amplitude") if k in args}
    from agent_presets_scene.terrain import Heightfield  # loads with the first terrain

    if "heights" in args:
        if generated:
            raise SceneError(
                f"give either 'heights' or a 'seed' (with rows, cols, amplitude), not both; "
                f"drop {', '.join(sorted(generated))}"
            )
        terrain = Heightfield(args["heights"], **layout)
    elif "seed" in args:
        progress(0, 2, "generating the terrain")
        terrain = Heightfield.generate(**generated, **layout)
        progress(1, 2, "adding the terrain")
    else:
        raise SceneError(
            "give 'heights' (a grid of numbers) or a 'seed' to generate hills; "
            "for flat ground use a seed with amplitude 0"
        )
    summary = _terrain_summary(scene.add_terrain(terrain))
    progress(2, 2, "terrain added")
    return summary


def _no_progress(done: float, total: float | None = None, message: str | None = None) -> None:
    return None


def remove_terrain(scene: Scene, args: dict[str, Any]) -> Any:
    return {"removed": _terrain_summary(scene.remove_terrain())}


def raycast_terrain(scene: Scene, args: dict[str, Any]) -> Any:
    max_distance = args.get("max_distance", math.inf)
    hit = scene.raycast_terrain(args["origin"], args["direction"], max_distance)
    return hit.to_dict() if hit is not None else {"hit": False}


def add_light(scene: Scene, args: dict[str, Any]) -> Any:
    light = scene.add_light(
        args["kind"],
        position=args.get("position"),
        direction=args.get("direction"),
        color=args.get("color"),
        intensity=args.get("intensity", 1.0),
        angle=args.get("angle"),
        name=args.get("name"),
    )
    return light.to_dict()


def set_light_state(scene: Scene, args: dict[str, Any]) -> Any:
    return scene.set_light_state(args["light_id"], args["on"]).to_dict()


def set_skybox(scene: Scene, args: dict[str, Any]) -> Any:
    scene.set_skybox(args["name"])
    return {"skybox": scene.skybox, "background": scene.background}


def set_background(scene: Scene, args: dict[str, Any]) -> Any:
    scene.set_background(args["color"])
    return {"skybox": scene.skybox, "background": scene.background}


def set_camera(scene: Scene, args: dict[str, Any]) -> Any:
    return scene.set_camera(args["position"], args["target"], args.get("fov")).to_dict()


def reset_camera(scene: Scene, args: dict[str, Any]) -> Any:
    return scene.reset_camera().to_dict()


def screen_ray(scene: Scene, args: dict[str, Any]) -> Any:
    origin, direction = scene.screen_ray(args["x"], args["y"], args["width"], args["height"])
    return {"origin": rounded(origin), "direction": rounded(direction)}


def get_state(scene: Scene, args: dict[str, Any]) -> Any:
    return scene.to_state()


def restore_state(scene: Scene, args: dict[str, Any]) -> Any:
    scene.restore(args["state"])
    return {
        "objects": len(scene.objects),
        "lights": len(scene.lights),
        "terrain": scene.terrain is not None,
    }


# What each tool returns (its structuredContent), as the scene's methods build it.
TEXT: dict[str, Any] = {"type": "string"}
NUMBER: dict[str, Any] = {"type": "number"}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
VEC3: dict[str, Any] = {"type": "array", "items": NUMBER, "minItems": 3, "maxItems": 3}
MAYBE_VEC3: dict[str, Any] = {**VEC3, "type": ["array", "null"]}
CUBOID_OUT = result_schema(
    {
        "id": TEXT,
        "kind": {"const": "cuboid"},
        "name": TEXT,
        "position": VEC3,
        "size": VEC3,
        "color": TEXT,
        "body": {
            **result_schema({"kind": {"enum": list(BODY_KINDS)}, "mass": NUMBER}),
            "type": ["object", "null"],
        },
    }
)
LIGHT_OUT = result_schema(
    {
        "id": TEXT,
        "kind": {"enum": list(LIGHT_KINDS)},
        "name": TEXT,
        "position": {**MAYBE_VEC3, "description": "null for a directional light."},
        "direction": {**MAYBE_VEC3, "description": "A unit vector; null for a point light."},
        "color": TEXT,
        "intensity": NUMBER,
        "angle": {"type": ["number", "null"], "description": "Spot lights only."},
        "on": {"type": "boolean"},
    }
)
TERRAIN_GRID: dict[str, Any] = {
    "rows": COUNT,
    "cols": COUNT,
    "cell_size": NUMBER,
    "origin": VEC3,
    "seed": {"type": ["integer", "null"]},
}
TERRAIN_OUTPUT = result_schema(
    {**TERRAIN_GRID, "bounds": result_schema({"min": VEC3, "max": VEC3})}
)
CAMERA_OUT = result_schema({"position": VEC3, "target": VEC3, "fov": NUMBER})
BODY_OUTPUT = result_schema({"replaced": {"type": "boolean"}, **CUBOID_OUT["properties"]})
SELECT_OUTPUT = result_schema(
    {"selected": {"type": ["string", "null"]}, "object": {**CUBOID_OUT, "type": ["object", "null"]}}
)
REMOVE_TERRAIN_OUTPUT = result_schema({"removed": TERRAIN_OUTPUT})
RAY_OUTPUT = result_schema({"origin": VEC3, "direction": VEC3})
RESTORE_OUTPUT = result_schema({"objects": COUNT, "lights": COUNT, "terrain": {"type": "boolean"}})
SKY_OUTPUT = result_schema({"skybox": {"enum": list(SKYBOXES)}, "background": TEXT})
RAYCAST_OUTPUT = result_schema(
    {
        "hit": {"type": "boolean"},
        "point": VEC3,
        "distance": NUMBER,
        "normal": VEC3,
        "cell": result_schema({"col": COUNT, "row": COUNT}),
        "inside": {"type": "boolean"},
    },
    ["point", "distance", "normal", "cell", "inside"],
    # A miss is {"hit": false} alone.
    allOf=[
        {
            "if": {"properties": {"hit": {"const": True}}, "required": ["hit"]},
            "then": {"required": ["point", "distance", "normal", "cell", "inside"]},
        }
    ],
)
STATE_OUTPUT = result_schema(
    {
        "version": {"type": "integer"},
        "objects": {"type": "array", "items": CUBOID_OUT},
        "selected": {"type": ["string", "null"]},
        "terrain": {
            **result_schema(
                {
                    **TERRAIN_GRID,
                    "heights": {"type": "array", "items": {"type": "array", "items": NUMBER}},
                }
            ),
            "type": ["object", "null"],
        },
        "lights": {"type": "array", "items": LIGHT_OUT},
        "skybox": {"enum": list(SKYBOXES)},
        "background": TEXT,
        "camera": CAMERA_OUT,
        "next_id": {"type": "integer", "minimum": 1},
    }
)


def tool_adapters() -> list[ToolAdapter]:
    source = __package__ or "agent_presets_scene"
    samples = {"type": "integer", "minimum": MIN_SAMPLES, "maximum": MAX_SAMPLES, "default": 33}
    return [
        KIT.adapter(
            add_cuboid,
            title="Add a cuboid",
            output_schema=CUBOID_OUT,
            description=(
                "Add a box to the 3D scene (y is up). Returns the object with its id, which the "
                "physics and selection tools take."
            ),
            input_schema=object_schema(
                {
                    "position": _vector("Centre of the box [x, y, z] in world units."),
                    "size": {
                        **_vector("Width, height, depth [w, h, d]; each greater than 0."),
                        "items": {"type": "number", "exclusiveMinimum": 0},
                    },
                    "name": {**NAME, "description": "A readable name; defaults to the id."},
                    "color": COLOR,
                },
                ["position", "size"],
            ),
            source=source,
        ),
        KIT.adapter(
            add_physics_body,
            title="Add a physics body",
            output_schema=BODY_OUTPUT,
            description=(
                "Give a scene object a physics body (replacing any body it has). 'dynamic' "
                "bodies fall and collide and need a mass > 0 (default 1); 'static' ones never "
                "move; 'kinematic' ones are moved by code, not by forces."
            ),
            input_schema=object_schema(
                {
                    "object_id": {**ID, "description": "Id of an existing scene object."},
                    "kind": {"enum": list(BODY_KINDS)},
                    "mass": {
                        "type": "number",
                        "minimum": 0,
                        "description": "Mass in kg; must be > 0 for dynamic bodies.",
                    },
                },
                ["object_id", "kind"],
            ),
            source=source,
        ),
        KIT.adapter(
            select_object,
            title="Select an object",
            output_schema=SELECT_OUTPUT,
            description="Select a scene object by id, or clear the selection with null.",
            input_schema=object_schema(
                {
                    "object_id": {
                        "type": ["string", "null"],
                        "minLength": 1,
                        "description": "Id of the object to select; null clears the selection.",
                    }
                },
                ["object_id"],
            ),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            add_terrain,
            task_support="optional",
            title="Generate terrain",
            output_schema=TERRAIN_OUTPUT,
            description=(
                "Add a heightmap terrain (one per scene). Either give 'heights' (rows along +z, "
                "each a list of heights along +x) or a 'seed' to generate rolling hills of up to "
                "'amplitude' above/below the origin. Sample (row r, col c) sits at "
                "origin + [c * cell_size, height, r * cell_size]."
            ),
            input_schema=object_schema(
                {
                    "heights": {
                        "type": "array",
                        "minItems": MIN_SAMPLES,
                        "maxItems": MAX_SAMPLES,
                        "items": {
                            "type": "array",
                            "minItems": MIN_SAMPLES,
                            "maxItems": MAX_SAMPLES,
                            "items": {"type": "number"},
                        },
                        "description": "The height grid; all rows equally long.",
                    },
                    "seed": {"type": "integer", "description": "Generate the terrain from this."},
                    "rows": {**samples, "description": "Generated rows (along z)."},
                    "cols": {**samples, "description": "Generated columns (along x)."},
                    "amplitude": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1000,
                        "default": 4,
                        "description": "Generated hills' height; 0 gives flat ground.",
                    },
                    "cell_size": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "default": 1,
                        "description": "Distance between neighbouring samples.",
                    },
                    "origin": _vector("World position of sample (0, 0); default [0, 0, 0]."),
                },
                [],
            ),
            source=source,
        ),
        KIT.adapter(
            raycast_terrain,
            title="Raycast the terrain",
            output_schema=RAYCAST_OUTPUT,
            description=(
                "Cast a ray against the terrain: returns the first hit point, its distance along "
                "the ray, the surface normal and the grid cell, or hit: false. The terrain is "
                "solid: a ray starting below the surface hits at distance 0 with inside: true."
            ),
            input_schema=object_schema(
                {
                    "origin": _vector("Start of the ray [x, y, z]."),
                    "direction": _vector("Direction of the ray; any non-zero length."),
                    "max_distance": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "Ignore hits farther than this (default: unlimited).",
                    },
                },
                ["origin", "direction"],
            ),
            annotations=READ_ONLY,
            source=source,
        ),
        KIT.adapter(
            remove_terrain,
            title="Remove terrain",
            output_schema=REMOVE_TERRAIN_OUTPUT,
            description="Delete the scene's terrain and its height data. This cannot be undone.",
            input_schema=object_schema({}, []),
            annotations={"destructiveHint": True},
            source=source,
        ),
        KIT.adapter(
            add_light,
            title="Add a light",
            output_schema=LIGHT_OUT,
            description=(
                "Add a light. 'point' needs a position and shines everywhere; 'directional' (sun) "
                "needs only a direction; 'spot' needs a position, a direction and a cone angle. "
                "Directions default to straight down. Returns the light with its id."
            ),
            input_schema=object_schema(
                {
                    "kind": {"enum": list(LIGHT_KINDS)},
                    "position": _vector("Where the light is (point and spot only)."),
                    "direction": _vector("Where it shines (directional and spot only)."),
                    "color": {**COLOR, "default": "#ffffff"},
                    "intensity": {"type": "number", "minimum": 0, "default": 1},
                    "angle": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "exclusiveMaximum": 90,
                        "description": "Spot only: half-angle of the cone in degrees (default 30).",
                    },
                    "name": NAME,
                },
                ["kind"],
            ),
            source=source,
        ),
        KIT.adapter(
            set_light_state,
            title="Set a light's state",
            output_schema=LIGHT_OUT,
            description="Switch a light on or off by id.",
            input_schema=object_schema(
                {
                    "light_id": {**ID, "description": "Id of an existing light."},
                    "on": {"type": "boolean"},
                },
                ["light_id", "on"],
            ),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            set_skybox,
            title="Set the skybox",
            output_schema=SKY_OUTPUT,
            description="Set the sky. 'none' shows the plain background color instead.",
            input_schema=object_schema({"name": {"enum": list(SKYBOXES)}}, ["name"]),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            set_background,
            title="Set the background",
            output_schema=SKY_OUTPUT,
            description=(
                "Set the background color, visible where no skybox is drawn (skybox 'none')."
            ),
            input_schema=object_schema({"color": COLOR}, ["color"]),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            set_camera,
            title="Set the camera",
            output_schema=CAMERA_OUT,
            description=(
                "Place the perspective camera (y is up): it stands at 'position' and looks at "
                "'target'. 'fov' is the vertical field of view in degrees (kept when omitted)."
            ),
            input_schema=object_schema(
                {
                    "position": _vector("Where the camera is."),
                    "target": _vector("The point it looks at; must differ from position."),
                    "fov": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 180},
                },
                ["position", "target"],
            ),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            reset_camera,
            title="Reset the camera",
            output_schema=CAMERA_OUT,
            description=(
                "Put the camera back to its default view: at [0, 5, 10] looking at the origin, "
                "fov 60."
            ),
            input_schema=object_schema({}, []),
            annotations={"idempotentHint": True},
            source=source,
        ),
        KIT.adapter(
            screen_ray,
            title="Cast a ray from the screen",
            output_schema=RAY_OUTPUT,
            description=(
                "Turn a point on the screen into a world ray from the camera (origin and unit "
                "direction), e.g. to find what the user clicked with {{scene.raycast-terrain}}. "
                "x runs right over [0, width], y down over [0, height], from the top-left corner."
            ),
            input_schema=object_schema(
                {
                    "x": {"type": "number", "minimum": 0},
                    "y": {"type": "number", "minimum": 0},
                    "width": {"type": "integer", "minimum": 1, "description": "Viewport width."},
                    "height": {"type": "integer", "minimum": 1, "description": "Viewport height."},
                },
                ["x", "y", "width", "height"],
            ),
            annotations=READ_ONLY,
            source=source,
        ),
        KIT.adapter(
            get_state,
            title="Get the scene state",
            output_schema=STATE_OUTPUT,
            description=(
                "Return the whole scene as JSON (objects, terrain, lights, sky, camera), suitable "
                "for {{scene.restore-state}}."
            ),
            input_schema=object_schema({}, []),
            annotations=READ_ONLY,
            source=source,
        ),
        KIT.adapter(
            restore_state,
            title="Restore the scene state",
            output_schema=RESTORE_OUTPUT,
            description=(
                "Replace the whole scene with a state from {{scene.get-state}}. The state is "
                "checked first; an invalid one changes nothing. Everything not in it is lost."
            ),
            input_schema=object_schema(
                {
                    "state": {
                        "type": "object",
                        "description": "A scene state exactly as space_scene_get_state returns.",
                    }
                },
                ["state"],
            ),
            annotations={"destructiveHint": True},
            source=source,
        ),
    ]
