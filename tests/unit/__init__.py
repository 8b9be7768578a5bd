"""The fast tier: unit-level tests with no node, no browser, no app and no PostgreSQL (``make test-fast``)."""
