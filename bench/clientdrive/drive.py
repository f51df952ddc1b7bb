"""Run one real client CLI against one stdio MCP server, with the scripted model.

The approach of the agent-presets client drivers (``opencode-drive``,
``claudecode-drive``, ``codex-drive``), in one place and with the bench's own
model (``fake_model.py``): the CLI is installed once with npm under a cache
folder, pinned; each run gets a fresh work folder (home, config, project);
the CLI and the scripted model run inside a loopback-only network namespace,
so nothing leaves the machine; the server runs behind ``mcp_tap.py``, which
logs the MCP traffic. Needs root (``ip netns``) and npm.

A run's work folder keeps: ``bodies/NNN.json`` (every request the client sent
the model, whole), ``llm.jsonl`` (the model's log), ``mcp.jsonl`` (the MCP
traffic) and its ``.stderr`` (the server's), ``run.out``/``run.err`` (the
CLI's output) and ``run.rc``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NETNS = "presets-bench"
SERVER_KEY = {"opencode": "srv", "claudecode": "presets", "codex": "presets"}


@dataclass(frozen=True)
class Cli:
    package: str
    version: str
    binary: str


CLIS = {
    "opencode": Cli("opencode-ai", "1.18.33", "opencode"),
    "claudecode": Cli("@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Cli("@openai/codex", "0.171.0", "codex"),
}


def cli_path(client: str, cache: Path) -> Path:
    """The pinned CLI under ``cache/CLIENT-drive/node`` (the client drivers' layout, so
    one install serves both), installed with npm on first use."""
    cli = CLIS[client]
    prefix = cache / f"{client}-drive" / "node"
    binary = prefix / "node_modules" / ".bin" / cli.binary
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["npm", "install", "--prefix", str(prefix), f"{cli.package}@{cli.version}"],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode or not binary.exists():
            raise RuntimeError(
                f"npm install {cli.package}@{cli.version} failed: {done.stderr[-400:]}"
            )
    return binary


def ensure_netns() -> None:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    if not any(line.split()[0] == NETNS for line in names.stdout.splitlines() if line.split()):
        subprocess.run(["ip", "netns", "add", NETNS], check=True)
        subprocess.run(["ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up"], check=True)


def _opencode(work: Path, server: list[str]) -> tuple[dict[str, str], str]:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": "http://127.0.0.1:__PORT__/v1", "apiKey": "unused"},
                "models": {"m": {"name": "fake-m", "tool_call": True}},
            }
        },
        "model": "fake/m",
        "small_model": "fake/m",
        "mcp": {"srv": {"type": "local", "command": server, "enabled": True, "timeout": 120000}},
    }
    (work / "opencode.json").write_text(json.dumps(config, indent=1))
    for d in ("cfg", "data", "state", "cache"):
        (work / d).mkdir()
    env = {
        "XDG_CONFIG_HOME": f"{work}/cfg",
        "XDG_DATA_HOME": f"{work}/data",
        "XDG_STATE_HOME": f"{work}/state",
        "XDG_CACHE_HOME": f"{work}/cache",
        "OPENCODE_CONFIG": f"{work}/opencode.json",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    }
    run = 'sed -i "s/__PORT__/$port/" "$WORK/opencode.json"; "$CLI" run "$PROMPT"'
    return env, run


def _claudecode(work: Path, server: list[str]) -> tuple[dict[str, str], str]:
    mcp = {"mcpServers": {"presets": {"command": server[0], "args": server[1:]}}}
    (work / "mcp.json").write_text(json.dumps(mcp, indent=1))
    env = {
        "CLAUDE_CONFIG_DIR": f"{work}/home/.claude",
        "ANTHROPIC_API_KEY": "fake",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "MCP_TIMEOUT": "120000",
        # Claude Code re-lists at most about once a second after tools/list_changed:
        # a model that answers at once would outrun every change (claudecode-drive).
        "FAKE_THINK_S": "1.5",
    }
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # bypassPermissions refuses root outside a sandbox; a netns is one
    run = (
        'ANTHROPIC_BASE_URL="http://127.0.0.1:$port" "$CLI" -p "$PROMPT" '
        '--mcp-config "$WORK/mcp.json" --strict-mcp-config '
        "--dangerously-skip-permissions --output-format json"
    )
    return env, run


def _codex(work: Path, server: list[str]) -> tuple[dict[str, str], str]:
    q = json.dumps
    (work / "home" / ".codex").mkdir(parents=True)
    (work / "home" / ".codex" / "config.toml").write_text(f"""model = "m"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake scripted model"
base_url = "http://127.0.0.1:1/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.presets]
command = {q(server[0])}
args = [{", ".join(q(a) for a in server[1:])}]
startup_timeout_sec = 120
tool_timeout_sec = 60
required = true
""")
    env = {"CODEX_HOME": f"{work}/home/.codex", "FAKE_API_KEY": "unused", "NO_COLOR": "1"}
    run = (
        '"$CLI" exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox '
        '-c "model_providers.fake.base_url=\\"http://127.0.0.1:$port/v1\\"" "$PROMPT"'
    )
    return env, run


CONFIGURE = {"opencode": _opencode, "claudecode": _claudecode, "codex": _codex}

INNER = """
FAKE_THINK_S="${FAKE_THINK_S:-0}" "$PY" "$HERE/fake_model.py" 0 "$SCRIPT" "$WORK/llm.jsonl" \\
  "$WORK/bodies" 2>"$WORK/llm.err" & llm=$!
for _ in $(seq 100); do [ -s "$WORK/llm.jsonl.port" ] && break; sleep 0.1; done
port=$(cat "$WORK/llm.jsonl.port" 2>/dev/null); export port
if [ -z "$port" ]; then
  echo "the fake model did not start" > "$WORK/run.err"; echo 1 > "$WORK/run.rc"
else
  cd "$WORK/proj" && timeout "$TMO" bash -c '{run}' \\
    > "$WORK/run.out" 2> "$WORK/run.err" < /dev/null
  echo $? > "$WORK/run.rc"
fi
kill $llm 2>/dev/null; wait $llm 2>/dev/null
true
"""


def drive(
    client: str,
    server: list[str],
    script: Path,
    work: Path,
    *,
    cache: Path,
    env: dict[str, str] | None = None,
    timeout: int = 900,
) -> Path:
    """Run ``client`` once against the stdio server ``server`` (run behind the tap);
    the work folder, which must not exist yet, keeps everything the run left."""
    cli = cli_path(client, cache)
    ensure_netns()
    work.mkdir(parents=True)
    for d in ("home", "tmp", "proj"):
        (work / d).mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work / "proj", check=True)
    tapped = [sys.executable, str(HERE / "mcp_tap.py"), str(work / "mcp.jsonl"), *server]
    client_env, run = CONFIGURE[client](work, tapped)
    prompt = json.loads(script.read_text())["prompt"]
    (work / "inner.sh").write_text(INNER.replace("{run}", run.replace("'", "'\\''")))
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": f"{work}/home",
        "TMPDIR": f"{work}/tmp",
        "LANG": "C.UTF-8",
        "WORK": str(work),
        "HERE": str(HERE),
        "PY": sys.executable,
        "SCRIPT": str(script),
        "CLI": str(cli),
        "TMO": str(timeout),
        "PROMPT": prompt,
    }
    full = {**base, **client_env, **(env or {})}
    cmd = [
        "ip",
        "netns",
        "exec",
        NETNS,
        "env",
        "-i",
        *[f"{k}={v}" for k, v in full.items()],
        "bash",
        str(work / "inner.sh"),
    ]
    subprocess.run(cmd, check=False, timeout=timeout + 60)
    _stop_leftovers(work / "mcp.jsonl.pids")
    (work / "command.txt").write_text(shlex.join(server) + "\n")
    return work


def _stop_leftovers(pids: Path) -> None:
    """The client stops the server it started; a tap or server still running is ours: stop it."""
    if not pids.exists():
        return
    for word in pids.read_text().split():
        try:
            cmdline = Path(f"/proc/{int(word)}/cmdline").read_bytes()
        except (ValueError, OSError):
            continue
        if (
            b"mcp_tap.py" in cmdline
            and str(pids).encode() in cmdline.replace(b"\0", b" ") + b".pids"
        ):
            os.kill(int(word), signal.SIGTERM)  # the relay passes it on to the server
