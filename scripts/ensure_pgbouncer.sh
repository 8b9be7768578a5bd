#!/bin/sh
# PgBouncer for tests/test_pgbouncer.py: the gateway is proven behind a transaction-pooling PgBouncer at the
# version Debian 12 ships (1.18, which has no max_prepared_statements). The tests start a private instance;
# the package's own service is left as Debian configures it.
exec "$(dirname "$0")/ensure_debian_package.sh" pgbouncer pgbouncer
