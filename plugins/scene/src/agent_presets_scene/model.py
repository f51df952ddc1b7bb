"""The headless scene: cuboids with physics bodies, a terrain, lights, sky and camera.

Pure Python with no core imports. Every refusal raises ``SceneError`` before
anything changes, and every change calls ``changed()`` once so the host
persists whole states only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from agent_presets import RowTable, TableRuntime, synced
from agent_presets_scene.camera import Camera
from agent_presets_scene.errors import SceneError
from agent_presets_scene.terms import BODY_KINDS as BODY_KINDS
from agent_presets_scene.terms import LIGHT_KINDS as LIGHT_KINDS
from agent_presets_scene.terms import SKYBOXES as SKYBOXES
from agent_presets_scene.terrain import Heightfield, RayHit
from agent_presets_scene.vectors import Vec3, hex_color, length, normalize, vec3

BodyKind = Literal["dynamic", "static", "kinematic"]
LightKind = Literal["point", "directional", "spot"]
STATE_VERSION: Final = 1
DEFAULT_BACKGROUND: Final = "#1e1e1e"
DEFAULT_CUBOID_COLOR: Final = "#808080"
DEFAULT_SPOT_ANGLE: Final = 30.0
DOWN: Final[Vec3] = (0.0, -1.0, 0.0)


@dataclass(frozen=True)
class PhysicsBody:
    kind: BodyKind
    mass: float

    def __post_init__(self) -> None:
        if self.kind not in BODY_KINDS:
            raise SceneError(f"body kind {self.kind!r} must be one of: {', '.join(BODY_KINDS)}")
        mass = self.mass
        if not isinstance(mass, int | float) or isinstance(mass, bool) or not math.isfinite(mass):
            raise SceneError(f"mass must be a finite number, not {mass!r}")
        if self.kind == "dynamic" and mass <= 0:
            raise SceneError(
                f"a dynamic body needs a mass greater than 0, not {mass!r}; use kind 'static' "
                "for an object that never moves"
            )
        if mass < 0:
            raise SceneError(f"mass must not be negative, not {mass!r}")
        object.__setattr__(self, "mass", float(mass))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "mass": self.mass}


@dataclass(frozen=True)
class Cuboid:
    id: str
    name: str
    position: Vec3
    size: Vec3
    color: str = DEFAULT_CUBOID_COLOR
    body: PhysicsBody | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", vec3(self.position, "position"))
        size = vec3(self.size, "size")
        if min(size) <= 0:
            raise SceneError(f"size must be three positive numbers [w, h, d], not {list(size)}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "color", hex_color(self.color))
        if not isinstance(self.name, str) or not self.name.strip():
            raise SceneError("an object name must be a non-empty string")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": "cuboid",
            "name": self.name,
            "position": list(self.position),
            "size": list(self.size),
            "color": self.color,
            "body": self.body.to_dict() if self.body else None,
        }


@dataclass(frozen=True)
class Light:
    """A light. Point and spot lights have a position; directional and spot ones a direction."""

    id: str
    kind: LightKind
    name: str
    position: Vec3 | None = None
    direction: Vec3 | None = None
    color: str = "#ffffff"
    intensity: float = 1.0
    angle: float | None = None
    on: bool = True

    def __post_init__(self) -> None:
        kind = self.kind
        if kind not in LIGHT_KINDS:
            raise SceneError(f"light kind {kind!r} must be one of: {', '.join(LIGHT_KINDS)}")
        if kind == "directional" and self.position is not None:
            raise SceneError(
                "a directional light shines from infinitely far away and has no position; "
                "give its 'direction' instead"
            )
        if kind != "directional" and self.position is None:
            raise SceneError(f"a {kind} light needs a position [x, y, z]")
        if kind == "point" and self.direction is not None:
            raise SceneError("a point light shines in every direction; leave out 'direction'")
        if kind != "spot" and self.angle is not None:
            raise SceneError(f"only spot lights have a cone angle; leave out 'angle' for {kind}")
        if self.position is not None:
            object.__setattr__(self, "position", vec3(self.position, "position"))
        if kind != "point":
            direction = DOWN if self.direction is None else vec3(self.direction, "direction")
            if abs(length(direction) - 1) > 1e-12:  # keep a saved unit vector bit for bit
                direction = normalize(direction, "direction")
            object.__setattr__(self, "direction", direction)
        if kind == "spot":
            angle = DEFAULT_SPOT_ANGLE if self.angle is None else self.angle
            if not isinstance(angle, int | float) or isinstance(angle, bool) or not 0 < angle < 90:
                raise SceneError(
                    f"a spot light's angle (half the cone, in degrees) must be between 0 and 90 "
                    f"(exclusive), not {angle!r}"
                )
            object.__setattr__(self, "angle", float(angle))
        object.__setattr__(self, "color", hex_color(self.color))
        intensity = self.intensity
        if (
            not isinstance(intensity, int | float)
            or isinstance(intensity, bool)
            or not math.isfinite(intensity)
            or intensity < 0
        ):
            raise SceneError(f"intensity must be a number of 0 or more, not {intensity!r}")
        object.__setattr__(self, "intensity", float(intensity))
        if not isinstance(self.on, bool):
            raise SceneError("a light's 'on' must be true or false")
        if not isinstance(self.name, str) or not self.name.strip():
            raise SceneError("a light name must be a non-empty string")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "position": list(self.position) if self.position is not None else None,
            "direction": list(self.direction) if self.direction is not None else None,
            "color": self.color,
            "intensity": self.intensity,
            "angle": self.angle,
            "on": self.on,
        }


class Scene(TableRuntime):
    """One world's scene.

    Made by ``Scene.from_table(table)`` for the headless host, or
    ``Scene.factory(saved_state, changed)`` for a state saved whole. On a
    table, the scene is rows: ``scene`` (the order of objects and lights,
    selection, sky, background, id counter), ``object/<id>``, ``light/<id>``,
    ``terrain`` and ``camera``; a change writes the rows it changed, so a
    camera move never rewrites the terrain. Other writers may share the table
    (replicas on one Redis): the public methods run through
    ``agent_presets.TableSync``, so each acts on the rows as committed now and
    a change that lost the race to commit runs again; the id counter is in the
    ``scene`` row, which every change that takes an id writes.
    """

    error = SceneError

    def __init__(
        self, changed: Callable[[], None] | None = None, *, table: RowTable | None = None
    ) -> None:
        super().__init__(changed, table=table)
        self.objects: dict[str, Cuboid] = {}
        self.lights: dict[str, Light] = {}
        self.selected: str | None = None
        self.terrain: Heightfield | None = None
        self.skybox: str = "none"
        self.background: str = DEFAULT_BACKGROUND
        self.camera = Camera()
        self._next_id = 1

    def read_rows(self, rows: dict[str, Any]) -> None:
        meta = rows.get("scene", {})
        state = {k: v for k, v in meta.items() if k not in ("objects", "lights")}
        state["objects"] = [rows[f"object/{i}"] for i in meta.get("objects", [])]
        state["lights"] = [rows[f"light/{i}"] for i in meta.get("lights", [])]
        state["terrain"] = rows.get("terrain")
        state["camera"] = rows.get("camera")
        self.load_state(state)

    def row(self, key: str) -> Any:
        if key == "scene":
            return {
                "version": STATE_VERSION,
                "objects": list(self.objects),
                "lights": list(self.lights),
                "selected": self.selected,
                "skybox": self.skybox,
                "background": self.background,
                "next_id": self._next_id,
            }
        if key == "camera":
            return self.camera.to_dict()
        if key == "terrain":
            return self.terrain.to_dict() if self.terrain is not None else None
        kind, _, ident = key.partition("/")
        item = (self.objects if kind == "object" else self.lights).get(ident)
        return item.to_dict() if item is not None else None

    def row_keys(self) -> list[str]:
        keys = ["scene", "camera", "terrain"]
        return keys + [f"object/{i}" for i in self.objects] + [f"light/{i}" for i in self.lights]

    # -- objects -------------------------------------------------------------

    @synced
    def add_cuboid(
        self,
        position: Vec3,
        size: Vec3,
        *,
        name: str | None = None,
        color: str | None = None,
    ) -> Cuboid:
        object_id = self._peek_id("cuboid")
        cuboid = Cuboid(
            object_id,
            object_id if name is None else name.strip(),
            position,
            size,
            DEFAULT_CUBOID_COLOR if color is None else color,
        )
        self._new_id("cuboid")
        self.objects[object_id] = cuboid
        self.save("scene", f"object/{object_id}")
        return cuboid

    @synced
    def add_physics_body(
        self, object_id: str, kind: BodyKind, mass: float | None = None
    ) -> tuple[Cuboid, bool]:
        """Attach (or replace) an object's body; returns ``(object, replaced)``."""
        cuboid = self.get_object(object_id)
        if mass is None:
            mass = 1.0 if kind == "dynamic" else 0.0
        body = PhysicsBody(kind, mass)
        updated = replace(cuboid, body=body)
        self.objects[object_id] = updated
        self.save(f"object/{object_id}")
        return updated, cuboid.body is not None

    @synced
    def select_object(self, object_id: str | None) -> None:
        if object_id is not None:
            self.get_object(object_id)
        if self.selected != object_id:
            self.selected = object_id
            self.save("scene")

    @synced
    def get_object(self, object_id: str) -> Cuboid:
        cuboid = self.objects.get(object_id)
        if cuboid is None:
            known = ", ".join(self.objects) or "none yet"
            raise SceneError(
                f"no scene object with id {object_id!r} (objects: {known}); create one with "
                "space_scene_add_cuboid first"
            )
        return cuboid

    # -- terrain -------------------------------------------------------------

    @synced
    def add_terrain(self, terrain: Heightfield) -> Heightfield:
        if self.terrain is not None:
            raise SceneError(
                "the scene already has a terrain; remove it first with "
                "space_scene_remove_terrain (preset scene-terrain-destructive-tools), "
                "or keep using it"
            )
        self.terrain = terrain
        self.save("terrain")
        return terrain

    @synced
    def remove_terrain(self) -> Heightfield:
        terrain = self.require_terrain()
        self.terrain = None
        self.save("terrain")
        return terrain

    @synced
    def require_terrain(self) -> Heightfield:
        if self.terrain is None:
            raise SceneError("the scene has no terrain; add one with space_scene_add_terrain")
        return self.terrain

    @synced
    def raycast_terrain(
        self, origin: Vec3, direction: Vec3, max_distance: float = math.inf
    ) -> RayHit | None:
        terrain = self.require_terrain()
        return terrain.raycast(vec3(origin, "origin"), vec3(direction, "direction"), max_distance)

    # -- lights, sky ---------------------------------------------------------

    @synced
    def add_light(
        self,
        kind: LightKind,
        *,
        position: Vec3 | None = None,
        direction: Vec3 | None = None,
        color: str | None = None,
        intensity: float = 1.0,
        angle: float | None = None,
        name: str | None = None,
    ) -> Light:
        light_id = self._peek_id("light")
        light = Light(
            light_id,
            kind,
            light_id if name is None else name.strip(),
            position,
            direction,
            "#ffffff" if color is None else color,
            intensity,
            angle,
        )
        self._new_id("light")
        self.lights[light_id] = light
        self.save("scene", f"light/{light_id}")
        return light

    @synced
    def set_light_state(self, light_id: str, on: bool) -> Light:
        light = self.lights.get(light_id)
        if light is None:
            known = ", ".join(self.lights) or "none yet"
            raise SceneError(
                f"no light with id {light_id!r} (lights: {known}); add one with "
                "space_scene_add_light"
            )
        if light.on != on:
            light = replace(light, on=on)
            self.lights[light_id] = light
            self.save(f"light/{light_id}")
        return light

    @synced
    def set_skybox(self, name: str) -> None:
        if name not in SKYBOXES:
            raise SceneError(f"unknown skybox {name!r}; use one of: {', '.join(SKYBOXES)}")
        self.skybox = name
        self.save("scene")

    @synced
    def set_background(self, color: str) -> None:
        self.background = hex_color(color)
        self.save("scene")

    # -- camera --------------------------------------------------------------

    @synced
    def set_camera(self, position: Vec3, target: Vec3, fov: float | None = None) -> Camera:
        self.camera = Camera(position, target, self.camera.fov if fov is None else fov)
        self.save("camera")
        return self.camera

    @synced
    def reset_camera(self) -> Camera:
        self.camera = Camera()
        self.save("camera")
        return self.camera

    @synced
    def screen_ray(self, x: float, y: float, width: int, height: int) -> tuple[Vec3, Vec3]:
        return self.camera.screen_ray(x, y, width, height)

    # -- state ---------------------------------------------------------------

    @synced
    def console_view(self) -> dict[str, Any]:
        """What the browser console draws for this world: the scene from above."""
        from agent_presets_scene.topdown import top_down_svg

        svg = top_down_svg(self.terrain, list(self.objects.values()), list(self.lights.values()))
        return {"kind": "svg", "svg": svg}

    @synced
    def to_state(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "objects": [o.to_dict() for o in self.objects.values()],
            "selected": self.selected,
            "terrain": self.terrain.to_dict() if self.terrain else None,
            "lights": [light.to_dict() for light in self.lights.values()],
            "skybox": self.skybox,
            "background": self.background,
            "camera": self.camera.to_dict(),
            "next_id": self._next_id,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        try:
            self._parse(state)
        except SceneError as exc:
            raise SceneError(f"invalid scene state: {exc}") from None
        except (KeyError, TypeError) as exc:
            raise SceneError(f"invalid scene state: malformed field ({exc})") from None

    def _parse(self, state: Mapping[str, Any]) -> None:
        if not isinstance(state, Mapping):
            raise SceneError("a scene state must be an object, as space_scene_get_state returns")
        fields = {"version", "objects", "selected", "terrain", "lights", "skybox"}
        fields |= {"background", "camera", "next_id"}
        unknown = set(state) - fields
        if unknown:
            raise SceneError(f"unknown field(s) {sorted(unknown)}")
        if state.get("version", STATE_VERSION) != STATE_VERSION:
            raise SceneError(f"version {state.get('version')!r} is not {STATE_VERSION}")
        for i, raw in enumerate(_items(state, "objects")):
            _keys(
                raw, f"objects[{i}]", {"id", "position", "size"}, {"kind", "name", "color", "body"}
            )
            if raw.get("kind", "cuboid") != "cuboid":
                raise SceneError(f"objects[{i}]: kind {raw['kind']!r} must be cuboid")
            object_id = _state_id(raw["id"], f"objects[{i}]", self.objects)
            body = raw.get("body")
            if body is not None:
                _keys(body, f"objects[{i}].body", {"kind", "mass"}, set())
                body = PhysicsBody(body["kind"], body["mass"])
            self.objects[object_id] = Cuboid(
                object_id,
                raw.get("name", object_id),
                raw["position"],
                raw["size"],
                raw.get("color", DEFAULT_CUBOID_COLOR),
                body,
            )
        selected = state.get("selected")
        if selected is not None and selected not in self.objects:
            raise SceneError(f"selected object {selected!r} is not among the objects")
        self.selected = selected
        for i, raw in enumerate(_items(state, "lights")):
            optional = {"name", "position", "direction", "color", "intensity", "angle", "on"}
            _keys(raw, f"lights[{i}]", {"id", "kind"}, optional)
            light_id = _state_id(raw["id"], f"lights[{i}]", self.lights)
            if light_id in self.objects:
                raise SceneError(f"lights[{i}]: id {light_id!r} is also an object id")
            self.lights[light_id] = Light(
                light_id,
                raw["kind"],
                raw.get("name", light_id),
                raw.get("position"),
                raw.get("direction"),
                raw.get("color", "#ffffff"),
                raw.get("intensity", 1.0),
                raw.get("angle"),
                raw.get("on", True),
            )
        terrain = state.get("terrain")
        self.terrain = Heightfield.from_dict(terrain) if terrain is not None else None
        skybox = state.get("skybox", "none")
        if skybox not in SKYBOXES:
            raise SceneError(f"unknown skybox {skybox!r}")
        self.skybox = skybox
        self.background = hex_color(state.get("background", DEFAULT_BACKGROUND), "background")
        camera = state.get("camera")
        self.camera = Camera.from_dict(camera) if camera is not None else Camera()
        next_id = state.get("next_id", 1)
        if not isinstance(next_id, int) or isinstance(next_id, bool) or next_id < 1:
            raise SceneError("next_id must be a positive integer")
        self._next_id = next_id

    def _peek_id(self, prefix: str) -> str:
        n = self._next_id
        while f"{prefix}-{n}" in self.objects or f"{prefix}-{n}" in self.lights:
            n += 1
        return f"{prefix}-{n}"

    def _new_id(self, prefix: str) -> str:
        object_id = self._peek_id(prefix)
        self._next_id = int(object_id.rsplit("-", 1)[1]) + 1
        return object_id


def _items(state: Mapping[str, Any], key: str) -> list[Any]:
    value = state.get(key, [])
    if not isinstance(value, list):
        raise SceneError(f"{key} must be a list")
    return value


def _keys(raw: object, where: str, required: set[str], optional: set[str]) -> None:
    if not isinstance(raw, Mapping):
        raise SceneError(f"{where} must be an object")
    missing = required - set(raw)
    if missing:
        raise SceneError(f"{where} lacks {', '.join(sorted(missing))}")
    unknown = set(raw) - required - optional
    if unknown:
        raise SceneError(f"{where} has unknown field(s) {sorted(unknown)}")


def _state_id(value: object, where: str, taken: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not value:
        raise SceneError(f"{where}: id must be a non-empty string")
    if value in taken:
        raise SceneError(f"{where}: id {value!r} appears twice")
    return value
