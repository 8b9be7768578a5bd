"""Keys remember their last 8 characters, the part SPEC 4.9 shows of a masked legacy key.

Only the SHA-256 and the 8-character prefix were stored, so the masked display
could only show the head of a key. The tail is as public as the prefix (shown
on every listing); the ~190 bits between them stay secret. NULL for keys issued
before this column existed: those are shown by their prefix until rotated.
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE api_keys ADD COLUMN suffix TEXT"]
