#!/bin/sh
# Make sure Debian's Chromium is installed for the hosted-page browser tests
# (tests/test_pay_page_browser.py). Idempotent: installs only when missing.
set -eu

CHROMIUM=/usr/bin/chromium

if [ ! -x "$CHROMIUM" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "ensure_chromium: $CHROMIUM is missing and neither root nor sudo is available" >&2
        exit 1
    fi
    echo "ensure_chromium: installing chromium (apt-get)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

"$CHROMIUM" --version
