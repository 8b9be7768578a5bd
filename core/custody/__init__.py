"""Custody: the books proven against what the chain nodes say the gateway holds (issue 45 item 4)."""
