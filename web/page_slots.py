"""A hosted page rendered once per content, not once per view (issue 11: no work that could be done once).

An open payment page is reloaded every 15 s by every payer while it waits,
and nearly all of it depends only on the payment: of its context only the
script nonce and the countdown differ from one view to the next. A
``SlottedTemplate`` renders its template once per distinct rest of the
context, with unguessable markers where the per-view values ("slots") go,
keeps the text cut at the markers, and answers each view by joining the
pieces with that view's values, escaped as the template would have escaped
them. A slot whose value is None is part of the content (the template may
test it), not a slot.

The page's language (``web/i18n.py``) is part of every key: one payer's
language is never served to another.

Hooks (``decide_page_branding``, ``extra_pay_page_forms``) still run on every view: their
answers are part of the context, so a changed answer is a new rendering.
A caller that knows what its content depends on (the pay page: its rows'
values and the hook answers) passes that as the key to ``render_bytes``
instead of having the whole context hashed, and builds the context only on
a miss.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Callable, Mapping

import jinja2
from markupsafe import Markup, escape

from ..core.infra.bounded import LruMap
from .i18n import language

# Distinct contents kept per process: a rendering is about 14 KB (its inline QR SVG included) and its
# content about 7 KB, so 512 held about 10 MB per worker once a soak had filled them (docs/decisions.md,
# "Worker RSS growth"); 128 open pages per worker still render once each.
CACHED_PAGES = 128
_PLAIN = frozenset({str, int, bool, float, type(None), Markup})  # hashable as they are: no _frozen call


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key part: lists and dicts become tuples (a TypeError for anything unhashable)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if isinstance(value, dict):
        return tuple((key, _frozen(item)) for key, item in value.items())
    return value


class SlottedTemplate:
    """``template_name`` rendered once per context apart from ``slots``; bounded LRU of the renderings."""

    def __init__(self, template_name: str, slots: tuple[str, ...], size: int = CACHED_PAGES) -> None:
        self.template_name = template_name
        self.slots = frozenset(slots)
        token = secrets.token_hex(12)  # per process: page content cannot spell a marker
        self._marks = {name: f"orbchain-slot-{token}-{name}" for name in slots}
        self._names = {mark: name for name, mark in self._marks.items()}
        # Longest first: a slot named like the start of another ("remaining", "remaining_seconds") must
        # not cut the longer one's marker short.
        marks = sorted(self._marks.values(), key=len, reverse=True)
        self._cut = re.compile("(" + "|".join(re.escape(mark) for mark in marks) + ")")
        self._renderings: LruMap[Any, Any] = LruMap(size)

    def render(self, env: jinja2.Environment, context: Mapping[str, Any]) -> str:
        """The template rendered with ``context``: the same text as ``env`` renders, from the cache when seen."""
        slots = self.slots
        parts: list[Any] = []
        for name, value in context.items():
            if value is None or name not in slots:
                parts.append(name)
                parts.append(value if value.__class__ in _PLAIN else _frozen(value))
        return self.render_bytes(env, tuple(parts), context, lambda: context).decode()

    def render_bytes(self, env: jinja2.Environment, key: Any, values: Mapping[str, Any],
                     context: Callable[[], Mapping[str, Any]]) -> bytes:
        """The rendering as UTF-8, for a caller that knows what the content depends on.

        ``key`` must differ whenever a non-slot value (or which slots are
        None) may differ, e.g. it holds the rows the context is built from
        (None: render without the cache); ``values`` holds the slots' values
        of this view, and ``context()`` builds the whole context (slots
        included), called only on a miss.
        """
        if key is not None:
            key = (language(), key)  # the same content in two languages is two renderings
        try:
            pieces = None if key is None else self._renderings.get(key)
        except TypeError:  # an unhashable value (a plugin's object): render as usual
            key = None
        if key is None:
            return env.get_template(self.template_name).render(context()).encode()
        if pieces is None:
            pieces = self._render(env, context())
            self._renderings.put(key, pieces)
        texts, names = pieces
        out = [texts[0]]
        for name, text in zip(names, texts[1:]):
            out.append(str(escape(values[name])).encode())
            out.append(text)
        return b"".join(out)

    def _render(self, env: jinja2.Environment, context: Mapping[str, Any]) -> tuple[tuple[bytes, ...], tuple[str, ...]]:
        marked = {name: (self._marks[name] if name in self.slots and value is not None else value)
                  for name, value in context.items()}
        parts = self._cut.split(env.get_template(self.template_name).render(marked))
        return tuple(part.encode() for part in parts[0::2]), tuple(self._names[mark] for mark in parts[1::2])
