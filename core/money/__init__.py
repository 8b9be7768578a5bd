"""Exact amounts and the coins they are counted in: base units, the coin registry, display prices."""
