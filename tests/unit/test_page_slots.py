"""A page rendered once per content (web/page_slots.py): same text as a plain render, per-view values fresh."""

from __future__ import annotations

import jinja2
import pytest

from orbchain.web.page_slots import SlottedTemplate

TEMPLATE = (
    "<h1>{{ title }}</h1>{% for item in items %}<li>{{ item.name }}</li>{% endfor %}"
    "{% if left %}<b data-s=\"{{ seconds }}\">{{ left }}</b>{% else %}closed{% endif %}"
    "<script nonce=\"{{ nonce }}\"></script>"
)


@pytest.fixture
def env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.DictLoader({"page.html": TEMPLATE}), autoescape=True)


def plain(env: jinja2.Environment, context: dict) -> str:
    return env.get_template("page.html").render(context)


def context(**changes) -> dict:
    base = {"title": "Pay <now>", "items": [{"name": "a&b"}], "left": "01:00", "seconds": 60, "nonce": "n1"}
    return {**base, **changes}


def test_same_text_as_a_plain_render_and_per_view_values_fresh(env):
    page = SlottedTemplate("page.html", ("nonce", "left", "seconds"))
    for view in (context(), context(nonce="n2", left="00:59", seconds=59), context(left="<x>", seconds=1)):
        assert page.render(env, view) == plain(env, view)
    assert len(page._renderings) == 1  # one rendering served all three views


def test_a_none_slot_is_content_the_template_may_test(env):
    page = SlottedTemplate("page.html", ("nonce", "left", "seconds"))
    closed = context(left=None, seconds=None)
    assert page.render(env, closed) == plain(env, closed)
    assert "closed" in page.render(env, closed)
    assert page.render(env, context()) == plain(env, context())
    assert len(page._renderings) == 2


def test_other_content_is_another_rendering(env):
    page = SlottedTemplate("page.html", ("nonce", "left", "seconds"))
    first, second = context(), context(items=[{"name": "c"}])
    assert page.render(env, first) != page.render(env, second)
    assert page.render(env, second) == plain(env, second)


def test_bounded_and_unhashable_values_render_uncached(env):
    page = SlottedTemplate("page.html", ("nonce",), size=2)
    for n in range(5):
        page.render(env, context(title=f"t{n}"))
    assert len(page._renderings) == 2

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]
        name = "plugin object"

    view = context(items=[Unhashable()])
    assert page.render(env, view) == plain(env, view)
    assert len(page._renderings) == 2


def test_a_slot_named_like_the_start_of_another(env):
    """``remaining`` and ``remaining_seconds``: the longer marker is never cut at the shorter one."""
    env.loader.mapping["count.html"] = '<b data-s="{{ left_seconds }}">{{ left }}</b>'  # type: ignore[attr-defined]
    page = SlottedTemplate("count.html", ("left", "left_seconds"))
    view = {"left": "01:40", "left_seconds": 100}
    assert page.render(env, view) == '<b data-s="100">01:40</b>' == env.get_template("count.html").render(view)


def test_render_bytes_builds_the_context_only_on_a_miss(env):
    page = SlottedTemplate("page.html", ("nonce", "left", "seconds"))
    built: list[dict] = []

    def view(nonce: str) -> bytes:
        values = {"nonce": nonce, "left": "01:00", "seconds": 60}

        def whole() -> dict:
            built.append(values)
            return context(**values)

        return page.render_bytes(env, ("content", 1), values, whole)

    assert view("n1") == plain(env, context(nonce="n1")).encode()
    assert view("<n2>") == plain(env, context(nonce="<n2>")).encode()
    assert len(built) == 1
    assert page.render_bytes(env, None, {"nonce": "n3"}, lambda: context(nonce="n3")) == \
        plain(env, context(nonce="n3")).encode()  # None: no cache at all
    assert len(page._renderings) == 1
