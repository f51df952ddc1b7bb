"""Start-up: spawn to the first ``tools/list``, ``presets serve`` against the bare SDK server.

Run: uv run python bench/start.py [--rounds N] [--spawns K] [--json] [-- SERVE_FLAGS...]

Each spawn starts a server as a stdio subprocess and plays a client that
does not wait (Codex's ``codex exec``): the handshake, and the first
``tools/list`` the moment the handshake is answered. The time is from the
spawn to the ``tools/list`` answer. Three servers, side by side in one run,
alternating their order every round:

- ``bare``: the bare SDK server of ``bench/server.py`` (``mcp``'s low-level
  server on its own stdio transport), serving as many no-op tools as
  ``presets serve`` lists;
- ``presets``: ``python -m agent_presets serve --state-dir TMP`` as a client
  spawns it (the start front answers before the SDK has loaded);
- ``presets-sdk``: the same with ``PRESETS_START_FRONT=0``: answered only
  once the SDK has loaded, as before the front.

Both protocol eras: ``legacy`` (``initialize`` at 2025-06-18, as Codex asks,
``notifications/initialized``, ``tools/list``) and ``modern``
(``server/discover`` then ``tools/list``, at 2026-07-28). Figures are the
medians of every spawn; the ratio is ``presets`` over ``bare`` (target at
most 0.3), with the median of the per-round ratios in brackets. A first,
discarded spawn of each server writes its byte code and the state folder,
so every measured spawn resumes saved state, as a restart does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET = 0.3
KINDS = ("bare", "presets", "presets-sdk")
ERAS = ("legacy", "modern")
CLIENT = {"name": "bench-start", "version": "1.0"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": CLIENT,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def opening(era: str) -> tuple[bytes, bytes]:
    """What the client sends first, and what it sends once that is answered."""
    if era == "legacy":
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": CLIENT,
        }
        first = _line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        then = _line({"jsonrpc": "2.0", "method": "notifications/initialized"}) + _line(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
    else:
        params = {"_meta": MODERN_META}
        first = _line({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": params})
        then = _line({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
    return first, then


class Servers:
    def __init__(self, flags: list[str]) -> None:
        self.state = Path(tempfile.mkdtemp(prefix="presets-bench-start-"))
        self.flags = flags
        self.tools = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("PRESETS_")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # every server reads its byte code

    def command(self, kind: str) -> tuple[list[str], dict[str, str]]:
        if kind == "bare":
            script = str(Path(__file__).with_name("server.py"))
            # bench/server.py's bare server adds a stand-in for the request tool.
            args = [script, "--serve", "bare", "--tools", str(max(self.tools - 1, 1))]
            return [sys.executable, *args], self.env
        args = ["-m", "agent_presets", "serve", "--state-dir", str(self.state), *self.flags]
        env = dict(self.env)
        if kind == "presets-sdk":
            env["PRESETS_START_FRONT"] = "0"
        return [sys.executable, *args], env

    def spawn(self, kind: str, era: str) -> float:
        """Seconds from the spawn to the ``tools/list`` answer."""
        command, env = self.command(kind)
        first, then = opening(era)
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(first)
            process.stdin.flush()
            process.stdout.readline()
            process.stdin.write(then)
            process.stdin.flush()
            answer = process.stdout.readline()
            elapsed = time.perf_counter() - start
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        tools = json.loads(answer)["result"]["tools"]
        if kind == "presets" and era == "legacy":
            self.tools = len(tools)
        return elapsed


def run(rounds: int, spawns: int, flags: list[str]) -> dict[str, Any]:
    servers = Servers(flags)
    for kind in ("presets", "bare", "presets-sdk"):  # discarded: byte code, state folder
        servers.spawn(kind, "legacy")
    times: dict[str, dict[str, list[float]]] = {e: {k: [] for k in KINDS} for e in ERAS}
    ratios: dict[str, list[float]] = {e: [] for e in ERAS}
    for r in range(rounds):
        order = KINDS if r % 2 == 0 else tuple(reversed(KINDS))
        for era in ERAS:
            got: dict[str, list[float]] = {k: [] for k in KINDS}
            for kind in order:
                for _ in range(spawns):
                    got[kind].append(servers.spawn(kind, era))
            for kind in KINDS:
                times[era][kind].extend(got[kind])
            ratios[era].append(statistics.median(got["presets"]) / statistics.median(got["bare"]))
    report: dict[str, Any] = {"rounds": rounds, "spawns": spawns, "tools": servers.tools}
    report["load"] = os.getloadavg()[0]
    for era in ERAS:
        medians = {k: statistics.median(v) for k, v in times[era].items()}
        report[era] = {
            "ms": {k: round(v * 1000) for k, v in medians.items()},
            "ratio": round(medians["presets"] / medians["bare"], 2),
            "ratio_rounds": round(statistics.median(ratios[era]), 2),
            "ratio_sdk": round(medians["presets-sdk"] / medians["bare"], 2),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=2, help="spawns of each server a round")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("flags", nargs="*", help="flags for presets serve (after --)")
    args = parser.parse_args(argv)
    report = run(args.rounds, args.spawns, args.flags)
    if args.json:
        print(json.dumps(report))
    else:
        print(
            f"spawn -> first tools/list ({report['tools']} tools), medians of "
            f"{args.rounds} rounds x {args.spawns} spawns; load average {report['load']:.1f}"
        )
        print("| era | bare | presets | presets-sdk | presets / bare | sdk / bare |")
        print("| --- | --- | --- | --- | --- | --- |")
        for era in ERAS:
            row = report[era]
            ms = row["ms"]
            print(
                f"| {era} | {ms['bare']} ms | {ms['presets']} ms | {ms['presets-sdk']} ms | "
                f"{row['ratio']} ({row['ratio_rounds']}) | {row['ratio_sdk']} |"
            )
    ok = all(report[era]["ratio"] <= TARGET for era in ERAS)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
