"""The program a unit's load process runs: run one unit's source, report how it went.

The server never runs a unit's code itself. It starts a fresh interpreter,
inside the general plugin's bubblewrap sandbox when that works, as
``python -I -S -c <this file's text> NAME PATH`` and writes the unit's source
to its stdin. So this file must stay a standalone script: the standard library
only (``-S`` leaves out every site-packages folder), nothing from the server.

The report is one JSON object on the process's original stdout:
``{"state": "loaded", "defines": [...]}`` or ``{"state": "error", "error": {...}}``.
The unit's own output (``print``) goes to stderr, so it cannot be mistaken
for the report by accident. A unit can still write a forged report on purpose;
that only misreports its own load, and the server checks the report's shape.

The server also imports this module for ``syntax_error``, so the inspect tool
and a failed load describe a syntax error the same way.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import types
from typing import Any

MODULE_PREFIX = "_agent_presets_unit_"


def load(name: str, path: str, data: bytes) -> dict[str, Any]:
    """Run ``data`` as the unit ``name`` (tracebacks name ``path``); its failure is the report."""
    module = types.ModuleType(f"{MODULE_PREFIX}{name}")
    module.__file__ = path
    # Registered while it runs, as a real import does (dataclasses and pickle look it up).
    sys.modules[module.__name__] = module
    try:
        exec(compile(data, path, "exec", dont_inherit=True), module.__dict__)
    except BaseException as exc:  # the unit's failure, SystemExit included
        return {"state": "error", "error": error_report(exc, path)}
    return {"state": "loaded", "defines": sorted(k for k in vars(module) if not k.startswith("_"))}


def error_report(exc: BaseException, path: str) -> dict[str, Any]:
    if isinstance(exc, SyntaxError) and exc.filename == path:
        report = syntax_error(exc)
        report["type"] = type(exc).__name__
        return report
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    line = frames[-1].lineno if frames else None
    lines = traceback.format_exception_only(type(exc), exc)
    return {
        "type": type(exc).__name__,
        "message": "".join(lines).strip(),
        "line": line,
        "traceback": "".join(traceback.format_list(frames)).rstrip() or None,
    }


def syntax_error(exc: SyntaxError) -> dict[str, Any]:
    return {
        "message": exc.msg,
        "line": exc.lineno,
        "column": exc.offset,
        "text": (exc.text or "").rstrip() or None,
    }


def main(argv: list[str]) -> None:
    name, path = argv[1], argv[2]
    data = sys.stdin.buffer.read()
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from here on, fd 1 (and print) is stderr
    result = load(name, path, data)
    sys.stdout.flush()
    report.write(json.dumps(result))
    report.close()


if __name__ == "__main__":
    main(sys.argv)
