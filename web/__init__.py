"""Orbchain web package."""
