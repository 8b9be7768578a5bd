#!/bin/sh
# systemd-analyze for tests/test_deploy.py: `verify` and `security --offline` judge
# deploy/orbchain.service with systemd's own parser instead of ours.
exec "$(dirname "$0")/ensure_debian_package.sh" systemd-analyze systemd
