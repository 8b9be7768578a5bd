"""The name payers see on the merchant's hosted pages without the brands plugin (issue 32 item 7).

NULL until the merchant sets one in Settings; a brand's own name still wins
(``core/pages/services.py``, ``page_branding_for``).
"""


def up(dialect: str) -> list[str]:
    return ["ALTER TABLE merchants ADD COLUMN display_name TEXT"]
