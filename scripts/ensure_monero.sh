#!/bin/sh
# monerod and monero-wallet-rpc for the XMR detection tests (tests/test_monero*.py start a
# regtest node and a wallet RPC of their own). Debian package `monero` ships both.
set -eu
"$(dirname "$0")/ensure_debian_package.sh" monerod monero
command -v monero-wallet-rpc >/dev/null
