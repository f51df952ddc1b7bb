#!/usr/bin/env bash
# Install the real MCP servers the upstream tests start through `presets serve`:
# the npm ones pinned in package-lock.json into ./node_modules, and the PyPI ones
# (pinned in versions.txt) into uv's cache, so `uvx NAME@VERSION` starts them offline
# afterwards. tests/e2e/test_e2e_upstreams.py finds both.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "tests/upstreams/install.sh: npm is missing; install Node.js (with npm) first" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
while read -r spec; do
  case "$spec" in ''|'#'*) continue ;; esac
  uvx --quiet "$spec" --help >/dev/null
done < versions.txt
