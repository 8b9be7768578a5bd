#!/bin/sh
# Chromium for the browser suites (tests/browser.py: Playwright launches /usr/bin/chromium by executable_path;
# `playwright install` and its browser download are never used).
exec "$(dirname "$0")/ensure_debian_package.sh" /usr/bin/chromium chromium
