#!/bin/sh
# nginx for tests/test_deploy.py: `nginx -t` judges deploy/nginx.conf with nginx's own parser, at the
# version Debian 12 ships (1.22), which the example must work on.
exec "$(dirname "$0")/ensure_debian_package.sh" nginx nginx
