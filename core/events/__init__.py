"""What the outside world is told: the event outbox, webhook delivery and after-commit actions."""
