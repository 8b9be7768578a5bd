"""Facts about the running gateway: readiness, and the metrics read from the database."""
