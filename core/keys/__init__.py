"""Keys and addresses: HD derivation, encodings and per-coin validation."""
