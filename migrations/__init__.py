"""Orbchain migrations package."""
