#!/bin/sh
# Make sure Debian's Litecoin Core (litecoind) is installed for the bitcoin-family
# integration tests (tests/test_bitcoin_*.py start a regtest node of their own).
# Idempotent: installs only when missing.
set -eu

if ! command -v litecoind >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "ensure_litecoind: litecoind is missing and neither root nor sudo is available" >&2
        exit 1
    fi
    echo "ensure_litecoind: installing litecoind (apt-get)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq litecoind >/dev/null
fi

litecoind -version | head -n 1
