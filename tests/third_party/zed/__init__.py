"""``zed``: a chain plugin as a third party writes it, from docs/plugins.md and ``orbchain.api`` alone.

ZED is an account chain that lives in the process (``node.py``): balances,
a mempool, blocks, reorganisations and pruning, so the adapter conformance
kit (``orbchain.testing.AdapterConformance``) can drive every promise of the
adapter contract without a daemon. The package is the plugin
(``plugin.py``: coin, address family, chain), its address format
(``address.py``), the adapter with its payout role (``adapter.py``) and its
tests (``test_zed.py``).
"""
