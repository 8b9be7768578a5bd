"""Schema of the solana plugin (namespace ``solana``)."""
