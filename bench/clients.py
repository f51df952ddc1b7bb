"""What real MCP clients send their model, against four ways of serving the same tools.

Run (root, npm, ``ip netns``; see ``bench/clientdrive/drive.py``):

    uv run python bench/clients.py [--clients opencode,claudecode,claudecode-nosearch,codex]
        [--scripts draw,long] [--servers all,live,auto,bm25] [--keep DIR] [--json]
        [--jobs N] [--attempts N] [--presets PATH] [--cache DIR]
    uv run python bench/clients.py --report RUNS.json ...   # tables of earlier --json runs

Each run drives one real client CLI (opencode 1.18.33, Claude Code 2.1.332
as it ships and with ``ENABLE_TOOL_SEARCH=false``, Codex 0.171.0) with a
scripted model (``bench/clientdrive/fake_model.py``; what it does at each
step: ``bench/clientdrive/steps.py``) against one server, and keeps every
request body the client sent the model. Scripts (``bench/clientdrive/scripts``):
``draw`` (the client drivers' drawing script, 4 steps) and ``long`` (34 steps,
with the user's request and a sentence of assistant text at each call,
switching scene -> canvas/drawing -> graph -> scene -> canvas/drawing).

Servers, all over the built-in plugins' tools, each on a fresh state folder,
starting on the scene surface:

- ``all``: ``presets serve --discovery list --on P ...`` with every preset
  that ships ``default_state: auto`` forced on: every tool any context
  activates is listed from the start and the list never changes, which is
  what a user has without presets; every call does the real work. (Presets
  that ship ``off``, the risky ones, are left out of every server.)
- ``live``: ``presets serve`` as it is today (``--delivery live`` where the
  option exists): the list follows the context, ``list_changed``.
- ``auto``: ``presets serve --delivery auto`` (only where the option exists).
- ``bm25``: FastMCP 4.2.3's ``BM25SearchTransform`` on a FastMCP proxy of
  the ``all`` server (``bench/clientdrive/fastmcp_bm25.py``, in a virtual
  environment the bench makes with ``uv``): the client lists ``search_tools``
  and ``call_tool``.

Figures per run (the token rules are ``bench/clientdrive/count.py``'s
docstring: chunks in the order tools, system, messages; o200k_base; the
cached part of a request is its longest run of leading chunks equal to an
earlier request's):

- ``requests``: POSTs to the model API (title and side requests included:
  the user pays for them too);
- ``input``: input tokens summed over the requests; ``uncached``: the tokens
  not served from cache, summed; ``x all``: uncached over the ``all``
  server's in the same client and script;
- ``ours max/mean``: tokens of the server's tool definitions in the tools
  array, per request;
- ``off-context``: tool definitions the model saw whose tool the server's
  current context does not activate, summed over requests. Per request: our
  definitions in its tools array, plus, for each tool result in its
  conversation, the definitions that result carries (a signature
  ``NAME(...)`` or a JSON entry ``"name": "NAME"``, as search results and
  notices give them), counting only the plugins' tools (the server's own
  ``presets_*``, ``search_tools`` and ``call_tool`` are always in context).
  The context at a request is the shell state (surface, activity, canvas)
  that the last tool result before it reported (read from the MCP tap, so
  the same for every server); its active tools are what ``presets resolve``
  gives for it;
- ``done``: the scripted model reached ``SCRIPT_DONE`` with no ``MISSING``;
- ``calls ok/refused``: the server's event log (``events.jsonl``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "clientdrive"))

from count import Counter, Request, count_run, defined_in_results, parse
from drive import drive

HERE = Path(__file__).resolve().parent / "clientdrive"
SCRIPTS = {"draw": HERE / "scripts" / "draw.json", "long": HERE / "scripts" / "long.json"}
CLIENTS = {
    "opencode": ("opencode", {}),
    "claudecode": ("claudecode", {}),
    "claudecode-nosearch": ("claudecode", {"ENABLE_TOOL_SEARCH": "false"}),
    "codex": ("codex", {}),
}
SERVERS = ("all", "live", "auto", "bm25")
FASTMCP = "fastmcp==4.2.3"
OWN = re.compile(r"(presets_(search|call|call_risky|request)|search_tools|call_tool)$")
STATE = re.compile(
    r'"surface":\s*"(\w+)",\s*"activity":\s*(null|"\w+"),\s*"canvas_visible":\s*(\w+)'
)


def presets_cli() -> str:
    """The ``presets`` that serves and resolves: ``--presets``, else this environment's."""
    if os.environ.get("PRESETS_BENCH_CLI"):
        return os.environ["PRESETS_BENCH_CLI"]
    found = Path(sys.executable).with_name("presets")
    return str(found) if found.exists() else shutil.which("presets") or "presets"


@cache
def serve_help() -> str:
    return subprocess.run(
        [presets_cli(), "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout


@cache
def auto_presets() -> tuple[str, ...]:
    out = subprocess.run(
        [presets_cli(), "list", "--json"], capture_output=True, text=True, check=True
    ).stdout
    return tuple(p["name"] for p in json.loads(out) if p["default_state"] == "auto")


@cache
def catalog() -> frozenset[str]:
    out = subprocess.run(
        [presets_cli(), "tools", "--json"], capture_output=True, text=True, check=True
    ).stdout
    return frozenset(t["mcp_name"] for t in json.loads(out))


@cache
def active(surface: str, activity: str | None, canvas: bool) -> frozenset[str]:
    cmd = [presets_cli(), "resolve", "--surface", surface, "--json"]
    cmd += ["--activity", activity] if activity else []
    cmd += ["--canvas-visible" if canvas else "--no-canvas-visible"]
    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return frozenset(t if isinstance(t, str) else t["name"] for t in out["mcp_tools"])


def fastmcp_python(cache_dir: Path) -> Path:
    """A virtual environment with FastMCP 4.2.3, made once (never the project's)."""
    venv = cache_dir / "presets-client-bench" / "fastmcp-4.2.3"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run(["uv", "venv", "-q", "-p", "3.11", str(venv)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(python), FASTMCP], check=True)
    return python


def server_command(kind: str, state: Path, cache_dir: Path) -> list[str]:
    base = [presets_cli(), "serve", "--state-dir", str(state), "--surface", "scene"]
    delivery = "--delivery" in serve_help()
    if kind in ("all", "bm25"):
        cmd = [*base, "--discovery", "list"] + [a for p in auto_presets() for a in ("--on", p)]
        cmd += ["--delivery", "live"] if delivery else []
        if kind == "bm25":
            cmd = [str(fastmcp_python(cache_dir)), str(HERE / "fastmcp_bm25.py"), *cmd]
        return cmd
    if kind == "live":
        return [*base, "--delivery", "live"] if delivery else base
    if kind == "auto":
        return [*base, "--delivery", "auto"]
    raise ValueError(kind)


def jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def timeline(work: Path) -> list[tuple[float, tuple[str, str | None, bool]]]:
    """(time, context) each time a tool result reported the shell state."""
    out = [(0.0, ("scene", None, False))]
    for rec in jsonl(work / "mcp.jsonl"):
        if rec.get("response_to") == "tools/call" and not rec.get("isError"):
            m = STATE.search(rec.get("text") or "")
            if m:
                act = None if m.group(2) == "null" else m.group(2).strip('"')
                out.append((rec["t"], (m.group(1), act, m.group(3) == "true")))
    return out


def measure(work: Path, state: Path, counter: Counter) -> dict[str, Any]:
    """The figures of one run, from its work folder and the server's state folder."""
    times = {r["n"]: r for r in jsonl(work / "llm.jsonl") if "n" in r}
    requests: list[Request] = []
    for f in sorted((work / "bodies").glob("*.json")):
        d = json.loads(f.read_text())
        r = parse(int(f.stem), d["path"], d["body"])
        if r is not None:
            requests.append(r)
    count_run(requests, counter)
    ctx = timeline(work)
    names = catalog()
    per = []
    for r in requests:
        t = times.get(r.n, {}).get("t", float("inf"))
        context = [c for when, c in ctx if when <= t][-1]
        on = active(*context)
        listed = [n for n in r.ours if n in names and n not in on]
        carried = sum(len(defined_in_results([text], names) - on) for text in r.results)
        per.append(
            {
                "n": r.n,
                "input": r.input_tokens,
                "cached": r.cached_tokens,
                "uncached": r.uncached_tokens,
                "ours": r.our_tool_tokens,
                "off_context_listed": len(listed),
                "off_context_carried": carried,
                "context": list(context),
                "how": times.get(r.n, {}).get("how"),
                "call": times.get(r.n, {}).get("call"),
            }
        )
    log = jsonl(work / "llm.jsonl")
    scripted = [r for r in log if r.get("scripted")]
    missing = [
        r["reply"]
        for r in scripted
        if str(r.get("reply") or "").startswith(("MISSING", "UNLOADABLE"))
    ]
    done = bool(scripted) and scripted[-1].get("reply") == "SCRIPT_DONE" and not missing
    events = [e for e in jsonl(state / "events.jsonl") if e.get("kind") == "call"]
    with_tools = [p["ours"] for p in per]
    return {
        "requests": len(per),
        "input": sum(p["input"] for p in per),
        "uncached": sum(p["uncached"] for p in per),
        "ours_max": max(with_tools, default=0),
        "ours_mean": round(statistics.mean(with_tools)) if with_tools else 0,
        "off_context": sum(p["off_context_listed"] + p["off_context_carried"] for p in per),
        "done": done,
        "stopped": missing[:1]
        or (
            [] if done else [str(scripted[-1].get("reply")) if scripted else "no scripted request"]
        ),
        "calls_ok": sum(1 for e in events if e.get("ok")),
        "calls_refused": sum(1 for e in events if not e.get("ok")),
        "how": dict(sorted(_tally(r.get("how") for r in scripted).items())),
        "per_request": per,
    }


def _tally(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        if i:
            out[i] = out.get(i, 0) + 1
    return out


def one_run(
    client: str, script: str, server: str, root: Path, cache_dir: Path, attempts: int = 1
) -> dict[str, Any]:
    """One client, script and server; run again (up to ``attempts`` runs in all) while the
    script does not complete, so a race in the client is seen as such: ``attempt`` says
    which run the figures are of, ``failed`` what stopped the runs before it."""
    kind, env = CLIENTS[client]
    failed: list[str] = []
    for attempt in range(1, attempts + 1):
        name = f"{client}-{script}-{server}" + (f"-{attempt}" if attempt > 1 else "")
        state, work = root / name / "state", root / name / "work"
        started = time.time()
        cmd = server_command(server, state, cache_dir)
        drive(kind, cmd, SCRIPTS[script], work, cache=cache_dir, env=env)
        figures = measure(work, state, COUNTER)
        if figures["done"] or attempt == attempts:
            break
        failed += figures["stopped"]
    return {
        "client": client,
        "script": script,
        "server": server,
        "seconds": round(time.time() - started),
        "attempt": attempt,
        "failed": failed,
        **figures,
    }


COUNTER = Counter()


def table(runs: list[dict[str, Any]]) -> str:
    out = []
    for client, script in dict.fromkeys((r["client"], r["script"]) for r in runs):
        rows = [r for r in runs if r["client"] == client and r["script"] == script]
        base = next((r["uncached"] for r in rows if r["server"] == "all"), None)
        out += [
            f"\n{client}, script {script}:\n",
            "| server | requests | input | uncached | x all | ours max / mean | off-context "
            "| done | calls ok / refused |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
        ]
        for r in rows:
            ratio = f"{r['uncached'] / base:.2f}" if base else "-"
            done = "yes" if r["done"] else f"no ({', '.join(r['stopped'])})"
            if r.get("failed"):
                done += f", run {r['attempt']}; before: {', '.join(r['failed'])}"
            out.append(
                f"| {r['server']} | {r['requests']} | {r['input']:,} | {r['uncached']:,} "
                f"| {ratio} | "
                f"{r['ours_max']:,} / {r['ours_mean']:,} | {r['off_context']:,} | {done} | "
                f"{r['calls_ok']} / {r['calls_refused']} |"
            )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--scripts", default="draw,long")
    ap.add_argument("--servers", default=",".join(SERVERS))
    ap.add_argument("--keep", type=Path, help="keep every run's work folder (bodies, logs) here")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    ap.add_argument(
        "--attempts",
        type=int,
        default=1,
        help="run a combination again, up to this many runs, while its script does not "
        "complete (default 1); the table says which run it shows and what stopped the others",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")),
        help="where the CLIs (CLIENT-drive/node, the client drivers' layout) and the "
        "FastMCP environment are installed once (default ~/.cache)",
    )
    ap.add_argument(
        "--presets",
        help="the presets executable to serve with (e.g. another checkout's .venv/bin/presets); "
        "default: this environment's",
    )
    ap.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="print the tables of earlier --json outputs (one or more files) and run nothing",
    )
    args = ap.parse_args()
    if args.report:
        runs = [r for f in args.report for r in json.loads(f.read_text())["runs"]]
        print(table(runs))
        return 0
    if args.presets:
        os.environ["PRESETS_BENCH_CLI"] = str(Path(args.presets).resolve())
    servers = args.servers.split(",")
    if "auto" in servers and "--delivery" not in serve_help():
        print(
            "presets serve has no --delivery option here: leaving out the auto server",
            file=sys.stderr,
        )
        servers.remove("auto")
    combos = [
        (c, s, v) for s in args.scripts.split(",") for c in args.clients.split(",") for v in servers
    ]
    root = args.keep or Path(tempfile.mkdtemp(prefix="clients-bench."))
    root.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [
            pool.submit(one_run, c, s, v, root, args.cache, args.attempts) for c, s, v in combos
        ]
        runs = []
        for fut, (c, s, v) in zip(futures, combos, strict=True):
            run = fut.result()
            runs.append(run)
            print(
                f"{c} {s} {v}: {run['requests']} requests, {run['uncached']:,} uncached, "
                f"done={run['done']} ({run['seconds']} s)",
                file=sys.stderr,
            )
    if args.json:
        print(json.dumps({"tokenizer": COUNTER.label, "runs": runs}, indent=1))
    else:
        print(f"tokens: {COUNTER.label}")
        print(table(runs))
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
