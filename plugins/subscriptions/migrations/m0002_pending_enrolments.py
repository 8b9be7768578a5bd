"""Customer-page enrolments wait PENDING for their first payment, a few per client IP (issue 29).

``enrol_ip_hash`` is the SHA-256 of the plan id and the enrolling client's IP,
written only for enrolments made on the public page, so the plugin can count
one visitor's unpaid enrolments on a plan (``pending_per_ip``) without
storing the address itself; NULL for enrolments by the API or the dashboard.
The index serves that count.
"""


def up(dialect: str) -> list[str]:
    return [
        "ALTER TABLE subscriptions ADD COLUMN enrol_ip_hash TEXT",
        "CREATE INDEX subscriptions_pending_ip ON subscriptions (plan_id, enrol_ip_hash, status)",
    ]
