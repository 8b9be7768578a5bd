"""Orbchain core package."""
