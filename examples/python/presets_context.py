"""Tell a running ``presets serve`` the host's context, with the standard library only.

A host app that is not built on agent_presets (or runs in another process)
reports its context this way (docs/hosts.md). As a module::

    from presets_context import push
    answer = push(state_dir, {"surface": "canvas", "activity": "drawing"})
    if not answer["ok"]:
        print(answer["error"]["message"])

As a script::

    python3 examples/python/presets_context.py [--http] STATE_DIR KEY=VALUE...

``push`` returns the server's answer: ``{"v": 1, "ok": True, "result": {...}}``
or ``{"v": 1, "ok": False, "error": {"code", "message", ...}}``. With
``via="http"`` it goes to the console's endpoint (the server runs with
``--console``) with the host credential, instead of the control socket.
"""

from __future__ import annotations

import json
import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def push(
    state_dir: str | Path, fields: dict[str, Any], *, via: str = "socket", by: str = "host"
) -> dict[str, Any]:
    """Set ``fields`` of the running server's context; the server's answer."""
    message = {"op": "context", "set": fields, "by": by}
    state = Path(state_dir)
    if via == "http":
        return _over_http(state, message)
    return _over_socket(state, message)


def _no_server(state: Path, why: object) -> dict[str, Any]:
    return {
        "ok": False,
        "error": {"code": "no-server", "message": f"no presets server answers for {state} ({why})"},
    }


def _over_socket(state: Path, message: dict[str, Any]) -> dict[str, Any]:
    # One JSON object per line each way (docs/control.md).
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        try:
            sock.connect(str(state / "control.sock"))
        except OSError as exc:
            return _no_server(state, exc.strerror or exc)
        sock.sendall((json.dumps(message) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                return _no_server(state, "it closed the connection")
            data += chunk
    answer: dict[str, Any] = json.loads(data)
    return answer


def _over_http(state: Path, message: dict[str, Any]) -> dict[str, Any]:
    # Twice at most: a refused token may be an older server's, so read the file again.
    for _attempt in range(2):
        try:
            credential = json.loads((state / "host-credential.json").read_text())
        except (OSError, ValueError):
            return _no_server(state, "no host-credential.json: is it running with --console?")
        request = urllib.request.Request(
            credential["url"],
            data=json.dumps(message).encode(),
            headers={
                "Authorization": f"Bearer {credential['token']}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                answer: dict[str, Any] = json.load(response)
                return answer
        except urllib.error.HTTPError as exc:
            if exc.code != 401:
                refused: dict[str, Any] = json.load(exc)  # 400: the same error body
                return refused
        except OSError as exc:
            return _no_server(state, exc)
    return _no_server(state, "it refused the host credential")


def _value(text: str) -> Any:
    """VALUE as ``presets context set`` reads it: true, false, null (or nothing), else text."""
    return {"true": True, "false": False, "null": None, "": None}.get(text, text)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def main(argv: list[str]) -> int:
    via = "http" if "--http" in argv else "socket"
    rest = [a for a in argv if a != "--http"]
    if len(rest) < 2 or not all("=" in a for a in rest[1:]):
        print("usage: presets_context.py [--http] STATE_DIR KEY=VALUE...", file=sys.stderr)
        return 2
    fields = {k: _value(v) for k, _, v in (a.partition("=") for a in rest[1:])}
    answer = push(rest[0], fields, via=via)
    if not answer["ok"]:
        print(answer["error"]["message"], file=sys.stderr)
        return 1
    result = answer["result"]
    shown = " ".join(f"{k}={_shown(v)}" for k, v in sorted(result["context"].items()))
    print(f"context: {shown} (changed: {', '.join(result['changed'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
