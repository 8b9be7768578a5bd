#!/bin/sh
# Installs the Node tools the tests need, once: anvil (a local Ethereum node,
# npm @foundry-rs/anvil-linux-amd64) and solc-js (npm solc) for the EVM
# integration tests, axe-core (npm axe-core) for the accessibility checks.
# Idempotent: does nothing when both are already there. The prefix lies under
# node_modules/, which git ignores; tests/anvil.py looks in the same place
# (override both with ORBCHAIN_NODE_TOOLS).
set -eu
cd "$(dirname "$0")/.."
PREFIX="${ORBCHAIN_NODE_TOOLS:-node_modules/.tools}"
ANVIL="$PREFIX/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
SOLC="$PREFIX/node_modules/solc/package.json"
AXE="$PREFIX/node_modules/axe-core/axe.min.js"
if [ -x "$ANVIL" ] && [ -f "$SOLC" ] && [ -f "$AXE" ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "ensure_node_tools: npm is missing; install Node.js 18+ first" >&2
    exit 1
fi
mkdir -p "$PREFIX"
npm install --silent --no-audit --no-fund --prefix "$PREFIX" @foundry-rs/anvil-linux-amd64@^1.7 solc@^0.8.28 axe-core@^4.10
"$ANVIL" --version >/dev/null
test -f "$AXE"
echo "ensure_node_tools: anvil, solc and axe-core installed under $PREFIX"
