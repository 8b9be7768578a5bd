"""The payer pages' message catalogues (web/locale/): complete, current and compiled, in every language.

No database: these read the files. A message added to a payer page without
``make catalogues`` and a translation fails here, as does a .mo left stale
after its .po changed, or a translation that drops or renames a placeholder.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from orbchain.web import i18n

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "web" / "locale"
TRANSLATED = sorted(set(i18n.LANGUAGES) - {i18n.DEFAULT})
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")


def _catalogue(path: Path):
    with path.open("rb") as file:
        return read_po(file)


def _ids(catalogue) -> dict[tuple[str | None, str], object]:
    """Each message by (context, id): a word in two contexts ("payment status", "subscription status") is two."""
    return {(m.context, m.id if isinstance(m.id, str) else m.id[0]): m for m in catalogue if m.id}


def test_every_language_of_the_switcher_has_a_catalogue():
    assert {"en", "es", "pt", "ru", "zh", "de", "fr", "tr"} <= set(i18n.LANGUAGES)
    assert sorted(p.stem for p in LOCALE.glob("*.po")) == TRANSLATED


def test_the_template_is_what_the_sources_say(tmp_path):
    """The committed .pot lists exactly the messages pybabel extracts from the sources today (babel.cfg)."""
    out = tmp_path / "fresh.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F", "babel.cfg", "--no-location", "--sort-output", "-o", str(out), "."],
                   cwd=ROOT, check=True, capture_output=True)
    assert set(_ids(_catalogue(out))) == set(_ids(_catalogue(LOCALE / "orbchain.pot"))), "run `make catalogues`"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_every_message_is_translated_without_fuzzy_and_placeholders_match(lang):
    template = _ids(_catalogue(LOCALE / "orbchain.pot"))
    catalogue = _catalogue(LOCALE / f"{lang}.po")
    assert not catalogue.fuzzy, f"{lang}.po header is fuzzy"
    messages = _ids(catalogue)
    assert set(messages) == set(template), f"{lang}.po: missing {set(template) - set(messages)}"
    for key, message in messages.items():
        assert "fuzzy" not in message.flags, (lang, key)
        ids = [message.id] if isinstance(message.id, str) else list(message.id)
        strings = [message.string] if isinstance(message.string, str) else list(message.string)
        assert strings and all(s.strip() for s in strings), (lang, key, "untranslated")
        if isinstance(message.id, tuple):
            assert len(strings) == catalogue.num_plurals, (lang, key, "plural forms")
        wanted = set(PLACEHOLDER.findall(ids[-1])) | set(PLACEHOLDER.findall(ids[0]))
        for string in strings:
            assert set(PLACEHOLDER.findall(string)) == wanted, (lang, key, string)
            string % {name: 1 for name in wanted}  # formats: no stray % or unknown conversion


@pytest.mark.parametrize("lang", TRANSLATED)
def test_translations_are_not_copies_of_english(lang):
    """Short words (coin tickers, "Transactions" in French) may equal the English; whole sentences never do."""
    same = [m.id for m in _catalogue(LOCALE / f"{lang}.po")
            if isinstance(m.id, str) and m.id and len(m.id) > 30 and m.string == m.id]
    assert not same, (lang, same)


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_compiled_catalogue_is_the_po_compiled(lang):
    fresh = io.BytesIO()
    write_mo(fresh, _catalogue(LOCALE / f"{lang}.po"))
    assert (LOCALE / f"{lang}.mo").read_bytes() == fresh.getvalue(), f"{lang}.mo is stale: run `make catalogues`"


@pytest.mark.parametrize("lang", TRANSLATED)
def test_the_running_lookup_answers_in_each_language(lang):
    with i18n.using_language(lang):
        assert i18n.gettext("Amount to pay") != "Amount to pay"
        assert i18n.ngettext("%(num)d day", "%(num)d days", 30).startswith("30")
        assert "UTC" in i18n.format_timestamp(1_800_000_000)


@pytest.mark.parametrize(("header", "expected"), [
    ("es-ES,es;q=0.9,en;q=0.8", ["es", "en"]),
    ("en;q=0.5, de;q=0.9, fr", ["fr", "de", "en"]),
    ("pt-BR", ["pt"]),
    ("zh-CN,zh;q=0.9", ["zh"]),
    ("zh-TW, zh-Hant;q=0.9, ru;q=0.1", ["ru"]),  # Traditional Chinese is not served by the Simplified catalogue
    ("zh-Hans-SG", ["zh"]),
    ("tr;q=0, de;q=0.001", ["de"]),  # q=0 means "not this one"
    ("ja, ko;q=0.9", []),
    ("*", []),
    ("es;q=2, de;q=abc, fr;q=0.5", ["fr"]),  # malformed weights drop their range
    ("<script>alert(1)</script>, ru", ["ru"]),
    ("x" * 5000, []),
    ("," * 5000 + "es", []),  # read up to a bound, never parsed without one
    ("", []),
])
def test_accept_language_by_q_values(header, expected):
    assert i18n.parse_accept_language(header) == expected


@pytest.mark.parametrize(("query", "cookie", "accept", "expected"), [
    ("de", "ru", "es", "de"),
    (None, "ru", "es", "ru"),
    (None, None, "es", "es"),
    (None, None, None, "en"),
    ("xx", "yy", "ja", "en"),
    ("ES", None, None, "es"),
    ("es'\"><script>", "../../etc/passwd", "fr", "fr"),
    ("e" * 10000, None, None, "en"),
])
def test_the_choice_of_language(query, cookie, accept, expected):
    assert i18n.choose(query, cookie, accept) == expected


def test_a_plugin_catalogue_is_looked_up_after_the_core(tmp_path, monkeypatch):
    """``orbchain.api.add_catalogue``: a plugin's own domain, found for its messages, never over the core's."""
    from babel.messages.catalog import Catalog

    from orbchain import api

    catalogue = Catalog(locale="es", domain="acme")
    catalogue.add("Acme loyalty points", "Puntos de fidelidad de Acme")
    catalogue.add("Amount to pay", "NOT THE CORE'S WORDS")
    with (tmp_path / "es.mo").open("wb") as file:
        write_mo(file, catalogue)
    monkeypatch.setattr(i18n, "_extra", [])
    api.add_catalogue(tmp_path, "acme")
    api.add_catalogue(tmp_path, "acme")  # idempotent
    try:
        assert len(i18n._extra) == 1
        with api.using_language("es"):
            assert api.page_language() == "es"
            assert api.gettext("Acme loyalty points") == "Puntos de fidelidad de Acme"
            assert api.gettext("Amount to pay") == "Importe a pagar"
        with api.using_language("de"):  # no German catalogue in the plugin: its words stay as written
            assert api.gettext("Acme loyalty points") == "Acme loyalty points"
    finally:
        i18n.translations.cache_clear()
