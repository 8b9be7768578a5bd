#!/bin/sh
# Litecoin Core for the bitcoin-family integration tests (tests/test_bitcoin_litecoind.py
# start a regtest node of their own).
exec "$(dirname "$0")/ensure_debian_package.sh" litecoind litecoind
