"""Refunds: a paid payment's money sent back as a payout."""
