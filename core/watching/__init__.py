"""Following the chains: deposit addresses, the scanner, the deposit engine and catch-up over pruned blocks."""
