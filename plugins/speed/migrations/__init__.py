"""Migrations of the speed plugin (its own table)."""
