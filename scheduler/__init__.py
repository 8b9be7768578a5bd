"""APScheduler wiring: collects jobs from plugins; one leader across processes."""
