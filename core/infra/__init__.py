"""Plumbing every room stands on: database, configuration, logs, metrics, limits, secrets, migrations, stopping."""
