"""Deposit addresses: derivation counters, look-up by address, the table the scanner reads."""
