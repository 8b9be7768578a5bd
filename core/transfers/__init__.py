"""Balance transfers between merchants and their holds: the ledger, accounts and the outbox together."""
