"""Orbchain plugins package."""
