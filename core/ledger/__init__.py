"""The books: the double-entry ledger, its account names, reconciliation, credit postings and transfers."""
