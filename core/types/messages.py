"""Words the core says to people that a payer page can say in the payer's language.

A ``Translatable`` is the English text (a ``str``: the JSON API answers it
unchanged, SPEC 7) that also keeps its message id and named values, so a
page formats the same problem in its own language at render time
(``web/i18n.translate``). Sources mark these with ``N_`` and pybabel
extracts them (babel.cfg). The core never imports the web layer.
"""

from __future__ import annotations

from typing import Any


class Translatable(str):
    """``msgid % values`` in English, with ``msgid`` and ``values`` kept for a translation."""

    msgid: str
    values: dict[str, Any]

    def __new__(cls, msgid: str, **values: Any) -> "Translatable":
        text = super().__new__(cls, msgid % values if values else msgid)
        text.msgid = msgid
        text.values = values
        return text


N_ = Translatable
