#!/bin/sh
# Chromium for the hosted-page browser tests (tests/test_pay_page_browser.py).
exec "$(dirname "$0")/ensure_debian_package.sh" /usr/bin/chromium chromium
