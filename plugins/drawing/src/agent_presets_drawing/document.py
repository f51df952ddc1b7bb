"""The drawing runtime: a layered vector document with selection and history.

One ``Drawing`` belongs to one world of the headless host. It is plain Python
(no agent-presets imports), so a real host can reuse it or replace it with its
own controller offering the same methods.

Every mutation is a transaction: it validates first, changes the document,
and records on the undo stack only the rows it changed, each as it was and as
it became (a delta, never a copy of the document). A refused request changes
nothing; a request that leaves the document equal records nothing. Tool,
defaults and selection are part of the document, so undo steps back through
them too and "undo everything" restores the exact starting document.

The document is persisted as rows (see ``rows_of``): ``doc`` (everything but
the objects, with the layer order), ``layer/<id>`` (name and object order),
``object/<id>``, ``next`` (the id counters, which undo never rewinds), and
``undo/<seq>`` / ``redo/<seq>`` (the steps). Opened on a host table
(``Drawing.from_table``), a change writes its changed rows and its step, so a call
costs what it changed, not the size of the drawing or of its history.

The table may have other writers (replicas on one Redis): every public method
runs through ``agent_presets.TableSync``, which reloads the rows another
writer committed and runs a change again when its commit lost the race. The
id counters are the ``next`` row, written in the change's own transaction, so
two writers never hand out one id; history is the document's, whoever wrote.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Final

from agent_presets import RowTable, TableSync, synced
from agent_presets_drawing import geometry
from agent_presets_drawing.geometry import Box, Point
from agent_presets_drawing.terms import MATCH_MODES as MATCH_MODES
from agent_presets_drawing.terms import OPEN_KINDS as OPEN_KINDS
from agent_presets_drawing.terms import SHAPES as SHAPES
from agent_presets_drawing.terms import TOOLS as TOOLS
from agent_presets_drawing.terms import DrawingError as DrawingError

HISTORY_LIMIT: Final = 100
STATE_FORMAT: Final = 2
WHOLE_FORMAT: Final = 1
"""The format of earlier versions: the document and every undo step as whole copies."""
COLOR_RE: Final = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
LAYER_NAME_MAX: Final = 64
DEFAULT_STYLE: Final = {"fill": "none", "stroke": "#000000", "width": 2.0}


def new_document() -> dict[str, Any]:
    return {
        "width": 800,
        "height": 600,
        "background": "#ffffff",
        "layers": [{"id": "layer-1", "name": "Layer 1", "objects": []}],
        "active_layer": "layer-1",
        "selection": [],
        "tool": "select",
        "defaults": dict(DEFAULT_STYLE),
    }


def normalise_color(value: object, field: str) -> str:
    """``none`` or a lower-case ``#rrggbb``."""
    if value == "none":
        return "none"
    if not isinstance(value, str) or not COLOR_RE.match(value):
        raise DrawingError(f"{field} {value!r} is not a colour; use '#rrggbb', '#rgb' or 'none'")
    digits = value[1:].lower()
    if len(digits) == 3:
        digits = "".join(ch * 2 for ch in digits)
    return "#" + digits


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DrawingError(f"{field} must be a finite number, not {value!r}")
    return float(value)


def _point_list(points: object, field: str, minimum: int) -> list[list[float]]:
    if not isinstance(points, Sequence) or isinstance(points, str):
        raise DrawingError(f"{field} must be a list of [x, y] pairs")
    out = []
    for i, point in enumerate(points):
        if not isinstance(point, Sequence) or isinstance(point, str) or len(point) != 2:
            raise DrawingError(f"{field}[{i}] must be an [x, y] pair, not {point!r}")
        out.append([geometry.tidy(_number(c, f"{field}[{i}]")) for c in point])
    if len(out) < minimum:
        raise DrawingError(f"{field} needs at least {minimum} points, got {len(out)}")
    return out


def _snapshot(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"))


Rows = dict[str, Any]
Delta = dict[str, tuple[Any, Any]]
"""Changed rows: key -> (value before, value after); None is an absent row."""


@dataclass
class Step:
    """One undoable change: its label and the rows it changed."""

    seq: int
    label: str
    rows: Delta

    def to_row(self) -> dict[str, Any]:
        return {"label": self.label, "rows": {k: [b, a] for k, (b, a) in self.rows.items()}}

    @classmethod
    def from_row(cls, seq: int, row: Mapping[str, Any]) -> Step:
        return cls(seq, row["label"], {k: (b, a) for k, (b, a) in row["rows"].items()})


def _step_key(kind: str, seq: int) -> str:
    return f"{kind}/{seq:010d}"


def _object_row_key(object_id: str) -> str:
    return f"object/{object_id}"


def rows_of(doc: Mapping[str, Any]) -> Rows:
    """The document as rows: ``doc``, ``layer/<id>`` and ``object/<id>``.

    An object's row names its layer; within a layer, objects are in creation
    order, which is the order of their id numbers (no operation reorders
    them; one that does must add an explicit position to the row). So adding
    or removing an object writes its own row only.
    """
    rows: Rows = {"doc": _doc_row(doc)}
    for layer in doc["layers"]:
        rows[f"layer/{layer['id']}"] = _layer_row(layer)
        for obj in layer["objects"]:
            rows[_object_row_key(obj["id"])] = _object_row_value(layer, obj)
    return rows


def _object_row_value(layer: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    return {"layer": layer["id"], "object": copy.deepcopy(obj)}


def _order(object_id: str) -> int:
    return int(object_id.rsplit("-", 1)[1])


def _place(objects: list[dict[str, Any]], obj: dict[str, Any]) -> None:
    """Put ``obj`` among a layer's ``objects`` at its place in creation order."""
    order = _order(obj["id"])
    index = len(objects)
    while index > 0 and _order(objects[index - 1]["id"]) > order:
        index -= 1
    objects.insert(index, obj)


def _doc_row(doc: Mapping[str, Any]) -> dict[str, Any]:
    row = {k: copy.deepcopy(v) for k, v in doc.items() if k != "layers"}
    row["layers"] = [layer["id"] for layer in doc["layers"]]
    return row


def _layer_row(layer: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": layer["name"]}


def document_of(rows: Mapping[str, Any]) -> dict[str, Any]:
    """The nested document that ``rows`` describe (the inverse of ``rows_of``)."""
    meta = copy.deepcopy(rows["doc"])
    layers = {
        layer_id: {"id": layer_id, "name": rows[f"layer/{layer_id}"]["name"], "objects": []}
        for layer_id in meta.pop("layers")
    }
    objects = sorted(
        (value for key, value in rows.items() if key.startswith("object/")),
        key=lambda value: _order(value["object"]["id"]),
    )
    for value in objects:
        layers[value["layer"]]["objects"].append(copy.deepcopy(value["object"]))
    doc = new_document()
    doc.update(meta)
    doc["layers"] = list(layers.values())
    return doc


def _diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> Delta:
    return {
        key: (before.get(key), after.get(key))
        for key in {**before, **after}
        if before.get(key) != after.get(key)
    }


def migrate_whole_state(state: Mapping[str, Any]) -> Rows:
    """All rows, history included, of a drawing saved whole by an earlier version."""
    if state.get("format") != WHOLE_FORMAT or not isinstance(state.get("document"), dict):
        raise DrawingError(
            f"saved drawing has format {state.get('format')!r}, expected {WHOLE_FORMAT}; "
            "delete the saved drawing file to start a new drawing"
        )
    current = rows_of(state["document"])
    undo_docs = [rows_of(json.loads(step["document"])) for step in state.get("undo", [])]
    redo_docs = [rows_of(json.loads(step["document"])) for step in state.get("redo", [])]
    rows: Rows = dict(current)
    rows["next"] = {"layer": 2, "object": 1, **state.get("next", {})}
    # Undo step i takes the document after it (the next snapshot, or now) back to snapshot i.
    chain = [*undo_docs, current]
    for i, step in enumerate(state.get("undo", [])):
        rows[_step_key("undo", i + 1)] = Step(
            i + 1, step["label"], _diff(chain[i], chain[i + 1])
        ).to_row()
    # Redo steps apply top first: from now to the top snapshot, then downwards.
    count = len(undo_docs)
    after = current
    for j in range(len(redo_docs) - 1, -1, -1):
        seq = count + len(redo_docs) - j
        step = state["redo"][j]
        rows[_step_key("redo", seq)] = Step(seq, step["label"], _diff(after, redo_docs[j])).to_row()
        after = redo_docs[j]
    return rows


class Drawing:
    """A vector drawing: layers of objects, a selection, a tool, defaults, history."""

    def __init__(
        self,
        state: Mapping[str, Any] | None = None,
        changed: Callable[[], None] | None = None,
        *,
        table: RowTable | None = None,
    ) -> None:
        self._changed = changed or (lambda: None)
        self._table = table
        # Tool calls may arrive on several server threads at once, and other writers
        # may share the table: each method runs alone, on the rows as they are now.
        self.table_sync = TableSync(table, self._load_table, error=DrawingError)
        self._touched: dict[str, Any] | None = None
        if table is not None:
            self.table_sync.load()
        elif state is None:
            self._load_rows({})
            self._unsaved = False
        else:
            self._load(state)
            self._unsaved = False

    @classmethod
    def factory(cls, saved: dict[str, Any] | None, changed: Callable[[], None]) -> Drawing:
        """A drawing saved whole (``to_state()``), which reports each change to ``changed``."""
        return cls(saved, changed)

    @classmethod
    def from_table(cls, table: RowTable) -> Drawing:
        """The headless host's per-world runtime: rows in ``table``, each change writes its own."""
        return cls(table=table)

    @staticmethod
    def migrate(saved: dict[str, Any], table: RowTable) -> None:
        """Write a drawing that an earlier version saved as one JSON file into ``table``."""
        for key, value in migrate_whole_state(saved).items():
            table.put(key, value)

    # -- state ---------------------------------------------------------------

    @synced
    def to_state(self) -> dict[str, Any]:
        """The whole drawing, history included, as one JSON-ready mapping."""
        rows = rows_of(self._doc)
        rows["next"] = dict(self._next)
        rows.update({_step_key("undo", st.seq): st.to_row() for st in self._undo})
        rows.update({_step_key("redo", st.seq): st.to_row() for st in self._redo})
        return {"format": STATE_FORMAT, "rows": json.loads(json.dumps(rows))}

    def _load(self, state: Mapping[str, Any]) -> None:
        if state.get("format") == STATE_FORMAT and isinstance(state.get("rows"), dict):
            self._load_rows(state["rows"])
        else:
            self._load_rows(migrate_whole_state(state))

    def _load_table(self, rows: dict[str, Any]) -> None:
        self._load_rows(rows)
        self._unsaved = not rows  # a fresh drawing writes all its rows with its first change

    def _load_rows(self, rows: Mapping[str, Any]) -> None:
        if "doc" not in rows:
            doc = new_document()
        else:
            try:
                doc = document_of(rows)
            except (KeyError, TypeError) as exc:
                raise DrawingError(
                    f"the saved drawing is missing row {exc}; delete the drawing's rows to "
                    "start a new drawing"
                ) from None
        if not doc.get("layers"):
            raise DrawingError("saved drawing has no layers; delete the file to start anew")
        self._doc = doc
        self._next = {"layer": 2, "object": 1, **rows.get("next", {})}
        steps = {
            kind: [
                Step.from_row(int(key.split("/", 1)[1]), value)
                for key, value in sorted(rows.items())
                if key.startswith(f"{kind}/")
            ]
            for kind in ("undo", "redo")
        }
        self._undo: list[Step] = steps["undo"]
        self._redo: list[Step] = steps["redo"][::-1]  # the lowest number is redone first
        self._seq = max((st.seq for st in [*self._undo, *self._redo]), default=0)

    @synced
    def document(self) -> dict[str, Any]:
        """A copy of the document: what undo and redo restore."""
        result: dict[str, Any] = json.loads(_snapshot(self._doc))
        return result

    @property
    def undo_depth(self) -> int:
        return len(self._undo)

    @property
    def redo_depth(self) -> int:
        return len(self._redo)

    # -- reading -------------------------------------------------------------

    @synced
    def inspect(self) -> dict[str, Any]:
        """The document as JSON, each object with its bounding box, plus history depths."""
        doc = self.document()
        for layer in doc["layers"]:
            for obj in layer["objects"]:
                obj["bounds"] = geometry.bounds(obj).to_dict()
        doc["undo_depth"] = len(self._undo)
        doc["redo_depth"] = len(self._redo)
        doc["next_undo"] = self._undo[-1].label if self._undo else None
        doc["next_redo"] = self._redo[-1].label if self._redo else None
        return doc

    def layer(self, ref: str) -> dict[str, Any]:
        """The layer with id ``ref``, else the one named ``ref``."""
        layers: list[dict[str, Any]] = self._doc["layers"]
        for layer in layers:
            if layer["id"] == ref:
                return layer
        for layer in layers:
            if layer["name"] == ref:
                return layer
        raise DrawingError(
            f"no layer {ref!r}; layers (id: name): "
            + ", ".join(f"{lay['id']}: {lay['name']}" for lay in layers)
        )

    def find(self, object_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(layer, object)`` for an object id."""
        for layer in self._doc["layers"]:
            for obj in layer["objects"]:
                if obj["id"] == object_id:
                    return layer, obj
        raise DrawingError(
            f"no object {object_id!r}; call space_drawing_inspect to see the object ids"
        )

    def objects(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """``(layer, object)`` pairs, bottom to top (paint order)."""
        for layer in self._doc["layers"]:
            for obj in layer["objects"]:
                yield layer, obj

    def selected(self) -> list[dict[str, Any]]:
        return [self.find(oid)[1] for oid in self._doc["selection"]]

    @synced
    def sample_color(self, x: float, y: float) -> dict[str, Any]:
        """The colour painted at ``(x, y)``: the topmost object part covering it."""
        point = (_number(x, "x"), _number(y, "y"))
        for layer, obj in reversed(list(self.objects())):
            part = geometry.hit(obj, point)
            if part is not None:
                return {
                    "color": obj["style"][part],
                    "part": part,
                    "object_id": obj["id"],
                    "layer": layer["id"],
                }
        return {
            "color": self._doc["background"],
            "part": "background",
            "object_id": None,
            "layer": None,
        }

    @synced
    def to_svg(self) -> str:
        from agent_presets_drawing.svg import render

        return render(self._doc)

    def console_view(self) -> dict[str, Any]:
        """What the browser console draws for this world (its view protocol)."""
        return {"kind": "svg", "svg": self.to_svg()}

    # -- history -------------------------------------------------------------

    @contextmanager
    def _transaction(self, label: str) -> Iterator[dict[str, str]]:
        """Run a change; undo it on error; record and persist it if it changed anything.

        The document row and the layer rows are compared whole (they are
        small); objects are compared only when the body names them with
        ``_touch`` before changing them. The body may rewrite
        ``step["label"]`` once it knows, say, a new id.
        """
        counters = dict(self._next)
        self._touched = self._frame_rows()
        step = {"label": label}
        try:
            yield step
            before = self._touched
            after = self._frame_rows()
            after.update({k: self._object_row(k) for k in before if k.startswith("object/")})
            delta = _diff(before, after)
            if delta:
                self._seq += 1
                record = Step(self._seq, step["label"], delta)
                self._persist(record, counters)
        except BaseException:
            if self._touched is not None:
                self._apply(self._touched)
            self._next = counters
            raise
        finally:
            self._touched = None
        if delta:
            self._undo.append(record)
            del self._undo[:-HISTORY_LIMIT]
            self._redo.clear()
            self._changed()

    def _touch(self, object_ids: Iterator[str] | Sequence[str]) -> None:
        """Say that the body is about to change (or create) these objects."""
        assert self._touched is not None, "_touch outside a transaction"
        for oid in object_ids:
            key = _object_row_key(oid)
            if key not in self._touched:
                self._touched[key] = self._object_row(key)

    def _frame_rows(self) -> Rows:
        rows: Rows = {"doc": _doc_row(self._doc)}
        for layer in self._doc["layers"]:
            rows[f"layer/{layer['id']}"] = _layer_row(layer)
        return rows

    def _object_row(self, key: str) -> Any:
        oid = key.removeprefix("object/")
        for layer in self._doc["layers"]:
            for obj in layer["objects"]:
                if obj["id"] == oid:
                    return _object_row_value(layer, obj)
        return None

    def _apply(self, values: Mapping[str, Any]) -> None:
        """Set rows of the document in place (None removes one): layers, then objects.

        Only the rows given are touched, so undo and redo cost what the step
        changed, not the size of the document.
        """
        layers = {layer["id"]: layer for layer in self._doc["layers"]}
        for key, value in values.items():
            if key.startswith("layer/") and value is not None:
                layer_id = key.removeprefix("layer/")
                layer = layers.setdefault(layer_id, {"id": layer_id, "name": "", "objects": []})
                layer["name"] = value["name"]
        if "doc" in values:
            meta = copy.deepcopy(values["doc"])
            order = meta.pop("layers")
            self._doc.clear()
            self._doc.update(new_document())
            self._doc.update(meta)
            self._doc["layers"] = [layers[layer_id] for layer_id in order]
        for key, value in values.items():
            if not key.startswith("object/"):
                continue
            oid = key.removeprefix("object/")
            for layer in self._doc["layers"]:
                layer["objects"] = [o for o in layer["objects"] if o["id"] != oid]
            if value is not None:
                _place(layers[value["layer"]]["objects"], copy.deepcopy(value["object"]))

    def _persist(self, record: Step | None, counters: Mapping[str, int]) -> None:
        """Write a change's rows and history in one transaction of the table, if any."""
        table = self._table
        if table is None:
            return
        with table.transaction():
            if self._unsaved:
                for key, value in rows_of(self._doc).items():
                    table.put(key, value)
                self._unsaved = False
            elif record is not None:
                for key, (_, value) in record.rows.items():
                    if value is None:
                        table.delete(key)
                    else:
                        table.put(key, value)
            if self._next != counters or record is None:
                table.put("next", self._next)
            if record is not None:
                table.put(_step_key("undo", record.seq), record.to_row())
                overflow = len(self._undo) + 1 - HISTORY_LIMIT
                for old in self._undo[: max(overflow, 0)]:
                    table.delete(_step_key("undo", old.seq))
                for old in self._redo:
                    table.delete(_step_key("redo", old.seq))

    def _move_step(self, source: list[Step], target: list[Step], use: int) -> Step:
        """Undo (``use=0``: rows as they were) or redo (``use=1``) the top step of ``source``."""
        step = source[-1]
        values = {key: pair[use] for key, pair in step.rows.items()}
        table = self._table
        with table.transaction() if table is not None else nullcontext():
            if table is not None:
                if self._unsaved:
                    self._persist(None, self._next)
                for key, value in values.items():
                    if value is None:
                        table.delete(key)
                    else:
                        table.put(key, value)
                kinds = ("undo", "redo") if use == 0 else ("redo", "undo")
                table.delete(_step_key(kinds[0], step.seq))
                table.put(_step_key(kinds[1], step.seq), step.to_row())
            self._apply(values)
        source.pop()
        target.append(step)
        self._changed()
        return step

    @synced
    def undo(self) -> dict[str, Any]:
        if not self._undo:
            raise DrawingError(
                "nothing to undo: the drawing is as it was at the start of its history "
                f"(the last {HISTORY_LIMIT} changes are kept)"
            )
        step = self._move_step(self._undo, self._redo, 0)
        return {"undone": step.label, **self._depths()}

    @synced
    def redo(self) -> dict[str, Any]:
        if not self._redo:
            raise DrawingError(
                "nothing to redo: redo is only possible right after an undo, and any new "
                "change clears what could be redone"
            )
        step = self._move_step(self._redo, self._undo, 1)
        return {"redone": step.label, **self._depths()}

    def _depths(self) -> dict[str, Any]:
        return {"undo_depth": len(self._undo), "redo_depth": len(self._redo)}

    # -- tool and defaults ---------------------------------------------------

    @synced
    def set_tool(self, tool: str) -> dict[str, Any]:
        if tool not in TOOLS:
            raise DrawingError(f"unknown tool {tool!r}; use one of: {', '.join(TOOLS)}")
        previous = self._doc["tool"]
        with self._transaction(f"set tool {tool}"):
            self._doc["tool"] = tool
        return {"tool": tool, "previous": previous}

    @synced
    def set_defaults(
        self,
        fill: str | None = None,
        stroke: str | None = None,
        width: float | None = None,
    ) -> dict[str, Any]:
        """Change the style new objects get when an insert gives none."""
        update = self._style_update(fill, stroke, width)
        if not update:
            raise DrawingError("give at least one of fill, stroke or width to change")
        with self._transaction("set defaults"):
            self._doc["defaults"].update(update)
        return {"defaults": dict(self._doc["defaults"])}

    def _style_update(
        self, fill: object = None, stroke: object = None, width: object = None
    ) -> dict[str, Any]:
        update: dict[str, Any] = {}
        if fill is not None:
            update["fill"] = normalise_color(fill, "fill")
        if stroke is not None:
            update["stroke"] = normalise_color(stroke, "stroke")
        if width is not None:
            value = _number(width, "width")
            if value < 0:
                raise DrawingError(f"width must be 0 or more, not {value}")
            update["width"] = value
        return update

    def _style_for(self, kind: str, style: Mapping[str, Any] | None) -> dict[str, Any]:
        style = dict(style or {})
        unknown = set(style) - {"fill", "stroke", "width"}
        if unknown:
            raise DrawingError(f"unknown style key(s) {sorted(unknown)}; use fill, stroke, width")
        if kind in OPEN_KINDS and "fill" in style:
            raise DrawingError(f"a {kind} has no fill; give only stroke and width")
        merged = {**self._doc["defaults"], **self._style_update(**style)}
        if kind in OPEN_KINDS:
            del merged["fill"]
        return merged

    # -- layers --------------------------------------------------------------

    def _check_layer_name(self, name: object, ignore: dict[str, Any] | None = None) -> str:
        if not isinstance(name, str) or not name.strip() or len(name) > LAYER_NAME_MAX:
            raise DrawingError(f"a layer name must be 1-{LAYER_NAME_MAX} characters")
        name = name.strip()
        for layer in self._doc["layers"]:
            if layer is not ignore and (layer["name"] == name or layer["id"] == name):
                raise DrawingError(
                    f"{name!r} is already taken by layer {layer['id']} ({layer['name']}); "
                    "pick another name"
                )
        return name

    def _new_layer_id(self) -> str:
        n = self._next["layer"]
        self._next["layer"] = n + 1
        return f"layer-{n}"

    def _new_object_id(self) -> str:
        n = self._next["object"]
        self._next["object"] = n + 1
        return f"obj-{n}"

    def _free_name(self, base: str) -> str:
        names = {layer["name"] for layer in self._doc["layers"]}
        names |= {layer["id"] for layer in self._doc["layers"]}
        if base not in names:
            return base
        n = 2
        while f"{base} {n}" in names:
            n += 1
        return f"{base} {n}"

    def _index(self, layer: dict[str, Any]) -> int:
        return next(i for i, lay in enumerate(self._doc["layers"]) if lay is layer)

    @synced
    def add_layer(self, name: str | None = None) -> dict[str, Any]:
        """A new empty layer just above the active one; it becomes active."""
        with self._transaction("add layer") as step:
            layer_id = self._new_layer_id()
            if name is None:
                name = self._free_name(f"Layer {layer_id.split('-')[1]}")
            layer = {"id": layer_id, "name": self._check_layer_name(name), "objects": []}
            above = self._index(self.layer(self._doc["active_layer"])) + 1
            self._doc["layers"].insert(above, layer)
            self._doc["active_layer"] = layer_id
            step["label"] = f"add layer {layer_id} ({layer['name']})"
        return {"layer": copy.deepcopy(layer), "position": above}

    @synced
    def duplicate_layer(self, ref: str | None = None, name: str | None = None) -> dict[str, Any]:
        """Copy a layer (default: the active one) with new object ids, just above it."""
        source = self.layer(ref if ref is not None else self._doc["active_layer"])
        with self._transaction(f"duplicate layer {source['id']}") as step:
            layer_id = self._new_layer_id()
            name = self._check_layer_name(
                name if name is not None else self._free_name(f"{source['name']} copy")
            )
            objects = []
            for obj in source["objects"]:
                clone = copy.deepcopy(obj)
                clone["id"] = self._new_object_id()
                self._touch([clone["id"]])
                objects.append(clone)
            layer = {"id": layer_id, "name": name, "objects": objects}
            position = self._index(source) + 1
            self._doc["layers"].insert(position, layer)
            self._doc["active_layer"] = layer_id
            step["label"] = f"duplicate layer {source['id']} as {layer_id}"
        return {"layer": copy.deepcopy(layer), "position": position, "source": source["id"]}

    @synced
    def rename_layer(self, ref: str, name: str) -> dict[str, Any]:
        layer = self.layer(ref)
        name = self._check_layer_name(name, ignore=layer)
        with self._transaction(f"rename layer {layer['id']} to {name}"):
            layer["name"] = name
        return {"layer": {"id": layer["id"], "name": name}}

    @synced
    def set_active_layer(self, ref: str) -> dict[str, Any]:
        layer = self.layer(ref)
        with self._transaction(f"set active layer {layer['id']}"):
            self._doc["active_layer"] = layer["id"]
        return {"active_layer": layer["id"], "name": layer["name"]}

    @synced
    def delete_layer(self, ref: str) -> dict[str, Any]:
        layer = self.layer(ref)
        layers = self._doc["layers"]
        if len(layers) == 1:
            raise DrawingError(
                f"cannot delete {layer['id']} ({layer['name']}): it is the only layer and a "
                "drawing needs one; add another layer first, or delete its objects instead"
            )
        with self._transaction(f"delete layer {layer['id']} ({layer['name']})"):
            self._touch([obj["id"] for obj in layer["objects"]])
            index = self._index(layer)
            del layers[index]
            gone = {obj["id"] for obj in layer["objects"]}
            self._doc["selection"] = [i for i in self._doc["selection"] if i not in gone]
            if self._doc["active_layer"] == layer["id"]:
                self._doc["active_layer"] = layers[max(index - 1, 0)]["id"]
        return {
            "deleted": layer["id"],
            "objects_deleted": len(layer["objects"]),
            "active_layer": self._doc["active_layer"],
        }

    # -- inserting -----------------------------------------------------------

    def _insert(self, obj: dict[str, Any], layer_ref: str | None) -> dict[str, Any]:
        layer = self.layer(layer_ref if layer_ref is not None else self._doc["active_layer"])
        with self._transaction(f"insert {obj['kind']}") as step:
            obj = {"id": self._new_object_id(), **obj}
            self._touch([obj["id"]])
            layer["objects"].append(obj)
            step["label"] = f"insert {obj['kind']} {obj['id']} on {layer['id']}"
        result: dict[str, Any] = {
            "id": obj["id"],
            "layer": layer["id"],
            "object": copy.deepcopy(obj),
            "bounds": geometry.bounds(obj).to_dict(),
        }
        style = obj["style"]
        if style.get("fill", "none") == "none" and (
            style["stroke"] == "none" or style["width"] == 0
        ):
            result["warning"] = (
                "this object has no fill and no visible stroke, so it is invisible; "
                "give it a style with a fill or stroke colour"
            )
        return result

    @synced
    def insert_shape(
        self,
        shape: str,
        x: float | None = None,
        y: float | None = None,
        width: float | None = None,
        height: float | None = None,
        *,
        points: Sequence[Sequence[float]] | None = None,
        rotation: float = 0.0,
        style: Mapping[str, Any] | None = None,
        layer: str | None = None,
    ) -> dict[str, Any]:
        """A rect or ellipse in the box ``x, y, width, height``, or a polygon through ``points``."""
        if shape not in SHAPES:
            raise DrawingError(f"unknown shape {shape!r}; use one of: {', '.join(SHAPES)}")
        box = {"x": x, "y": y, "width": width, "height": height}
        if shape == "polygon":
            given = [k for k, v in box.items() if v is not None]
            if points is None:
                raise DrawingError("a polygon needs points: a list of at least 3 [x, y] corners")
            if given or rotation:
                extra = ", ".join([*given, *(["rotation"] if rotation else [])])
                raise DrawingError(
                    f"a polygon is placed by its points only; drop {extra} "
                    "(use space_drawing_transform_selection to move or turn it later)"
                )
            obj: dict[str, Any] = {"kind": "polygon", "points": _point_list(points, "points", 3)}
        else:
            if points is not None:
                raise DrawingError(
                    f"points are only for polygons; a {shape} takes x, y, width and height"
                )
            missing = [k for k, v in box.items() if v is None]
            if missing:
                raise DrawingError(f"a {shape} needs {', '.join(missing)}")
            values = {k: _number(v, k) for k, v in box.items()}
            for key in ("width", "height"):
                if values[key] <= 0:
                    raise DrawingError(f"{key} must be greater than 0, not {values[key]}")
            obj = {
                "kind": shape,
                **{k: geometry.tidy(v) for k, v in values.items()},
                "rotation": geometry.normalise_degrees(_number(rotation, "rotation")),
            }
        obj["style"] = self._style_for(shape, style)
        return self._insert(obj, layer)

    @synced
    def insert_line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        *,
        style: Mapping[str, Any] | None = None,
        layer: str | None = None,
    ) -> dict[str, Any]:
        points = _point_list([[x1, y1], [x2, y2]], "line", 2)
        if points[0] == points[1]:
            raise DrawingError("a line needs two different end points")
        return self._insert(
            {"kind": "line", "points": points, "style": self._style_for("line", style)}, layer
        )

    @synced
    def insert_stroke(
        self,
        points: Sequence[Sequence[float]],
        *,
        style: Mapping[str, Any] | None = None,
        layer: str | None = None,
    ) -> dict[str, Any]:
        """A freehand stroke: an open polyline through ``points`` in drawing order."""
        obj = {
            "kind": "stroke",
            "points": _point_list(points, "points", 2),
            "style": self._style_for("stroke", style),
        }
        return self._insert(obj, layer)

    # -- selection -----------------------------------------------------------

    @synced
    def select(
        self,
        ids: Sequence[str] | None = None,
        rect: Mapping[str, float] | None = None,
        *,
        match: str = "intersects",
        extend: bool = False,
        layer: str | None = None,
    ) -> dict[str, Any]:
        """Select objects by id, or by a rectangle tested against their bounding boxes.

        ``match="intersects"`` takes every object whose bounding box shares a
        point with the rectangle; ``"inside"`` only those whose box lies
        wholly within it. ``extend`` adds to the current selection.
        """
        if (ids is None) == (rect is None):
            raise DrawingError("give either ids or rect (not both) to say what to select")
        if match not in MATCH_MODES:
            raise DrawingError(f"match must be one of: {', '.join(MATCH_MODES)}")
        chosen: list[str] = []
        if ids is not None:
            if layer is not None:
                raise DrawingError("layer only narrows a rect selection; drop it when giving ids")
            if not ids:
                raise DrawingError(
                    "ids is empty; to select nothing call space_drawing_clear_selection"
                )
            for oid in ids:
                self.find(oid)
                if oid not in chosen:
                    chosen.append(oid)
        else:
            assert rect is not None
            area = Box(*(_number(rect.get(k), k) for k in ("x", "y", "width", "height")))
            if area.width < 0 or area.height < 0:
                raise DrawingError("rect width and height must be 0 or more")
            only = self.layer(layer) if layer is not None else None
            for lay, obj in self.objects():
                if only is not None and lay is not only:
                    continue
                box = geometry.bounds(obj)
                if area.contains(box) if match == "inside" else area.intersects(box):
                    chosen.append(obj["id"])
        selection = list(self._doc["selection"]) if extend else []
        selection += [oid for oid in chosen if oid not in selection]
        with self._transaction(f"select {len(selection)} object(s)"):
            self._doc["selection"] = selection
        return {
            "selection": list(selection),
            "count": len(selection),
            **({"bounds": self._selection_bounds().to_dict()} if selection else {}),
        }

    @synced
    def clear_selection(self) -> dict[str, Any]:
        previous = list(self._doc["selection"])
        with self._transaction("clear selection"):
            self._doc["selection"] = []
        return {"selection": [], "cleared": previous}

    def _selection_bounds(self) -> Box:
        return Box.union([geometry.bounds(obj) for obj in self.selected()])

    def _require_selection(self, action: str) -> list[dict[str, Any]]:
        if not self._doc["selection"]:
            raise DrawingError(
                f"nothing is selected to {action}; select objects first with "
                "space_drawing_select (by ids or by a rectangle)"
            )
        return self.selected()

    @synced
    def transform_selection(
        self,
        *,
        dx: float = 0.0,
        dy: float = 0.0,
        sx: float = 1.0,
        sy: float = 1.0,
        degrees: float = 0.0,
        origin: Point | None = None,
    ) -> dict[str, Any]:
        """Scale, then rotate (both about ``origin``), then translate the selected objects.

        ``origin`` defaults to the centre of the selection's bounding box.
        Positive degrees turn clockwise on screen (y grows downwards).
        """
        objects = self._require_selection("transform")
        dx, dy, sx, sy, degrees = (
            _number(v, k)
            for k, v in (("dx", dx), ("dy", dy), ("sx", sx), ("sy", sy), ("degrees", degrees))
        )
        if sx == 0 or sy == 0:
            raise DrawingError("sx and sy must not be 0 (that would flatten the objects)")
        if origin is None:
            origin = self._selection_bounds().centre
        else:
            origin = (_number(origin[0], "origin.x"), _number(origin[1], "origin.y"))
        m = geometry.IDENTITY
        if (sx, sy) != (1.0, 1.0):
            m = geometry.multiply(geometry.scaling(sx, sy, origin), m)
        if degrees % 360:
            m = geometry.multiply(geometry.rotation(degrees, origin), m)
        if (dx, dy) != (0.0, 0.0):
            m = geometry.multiply(geometry.translation(dx, dy), m)
        if m == geometry.IDENTITY:
            raise DrawingError(
                "this transform changes nothing; give dx/dy to move, sx/sy to scale "
                "or degrees to rotate"
            )
        with self._transaction(f"transform {len(objects)} object(s)"):
            self._touch([obj["id"] for obj in objects])
            for obj in objects:
                layer, _ = self.find(obj["id"])
                index = next(i for i, o in enumerate(layer["objects"]) if o is obj)
                layer["objects"][index] = geometry.transform_object(obj, m)
        return {
            "objects": copy.deepcopy(self.selected()),
            "bounds": self._selection_bounds().to_dict(),
            "origin": {"x": geometry.tidy(origin[0]), "y": geometry.tidy(origin[1])},
        }

    @synced
    def update_selection_style(
        self,
        fill: str | None = None,
        stroke: str | None = None,
        width: float | None = None,
    ) -> dict[str, Any]:
        """Restyle the selected objects; lines and strokes have no fill and keep none."""
        objects = self._require_selection("restyle")
        update = self._style_update(fill, stroke, width)
        if not update:
            raise DrawingError("give at least one of fill, stroke or width to change")
        open_only = all(obj["kind"] in OPEN_KINDS for obj in objects)
        if set(update) == {"fill"} and open_only:
            raise DrawingError(
                "the selection holds only lines and strokes, which have no fill; "
                "change their stroke colour instead"
            )
        skipped = []
        with self._transaction(f"restyle {len(objects)} object(s)"):
            self._touch([obj["id"] for obj in objects])
            for obj in objects:
                changes = dict(update)
                if obj["kind"] in OPEN_KINDS and "fill" in changes:
                    del changes["fill"]
                    skipped.append(obj["id"])
                obj["style"].update(changes)
        result: dict[str, Any] = {
            "updated": [obj["id"] for obj in objects],
            "styles": {obj["id"]: dict(obj["style"]) for obj in objects},
        }
        if skipped:
            result["fill_skipped"] = skipped
        return result

    @synced
    def delete_selected(self) -> dict[str, Any]:
        objects = self._require_selection("delete")
        gone = {obj["id"] for obj in objects}
        with self._transaction(f"delete {len(gone)} object(s)"):
            self._touch(sorted(gone))
            for layer in self._doc["layers"]:
                layer["objects"] = [o for o in layer["objects"] if o["id"] not in gone]
            self._doc["selection"] = []
        return {"deleted": [obj["id"] for obj in objects], "count": len(objects)}
