"""Orbchain chains package."""
