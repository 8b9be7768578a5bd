"""ChangeNOW venue (placeholder until written)."""
