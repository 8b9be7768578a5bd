#!/bin/sh
# jq for tests/test_readme_try_it.py: the README's "Try it" block reads answers with jq, as a reader would.
exec "$(dirname "$0")/ensure_debian_package.sh" jq jq
