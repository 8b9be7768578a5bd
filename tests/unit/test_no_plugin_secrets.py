"""No plugin reads the operator's secrets (issue 44 item 4): a plugin signs with ``derived_key(gateway,
"<its name>/<purpose>")``, a key of its own purpose that cannot be turned back into the root secret.

An AST scan of plugins/ for every way a plugin reached the secrets before: ``gateway.secrets``,
``require_secrets()``, the ``jwt_secret`` and the seed (``seed_material``, the receipt key), loading
them (``load_secrets``) and the key stores that derive private keys from the seed (``keystore``,
``SeedKeyStore``, the BIP-39 seed functions). The standard library's ``secrets`` module (random tokens)
is a module name, not an attribute, and stays allowed. A ``derived_key`` call must name its purpose as a
literal in the plugin's own namespace: ``plugins/telegram/`` asks for ``"telegram/..."`` only, so no
built-in plugin can take another's key (the runtime check refuses the core's ``core/`` namespace and a
malformed purpose; which plugin calls cannot be known at run time, so the namespace rule is this test's).

The allowed exception: chain plugins (chains/) are key holders by role. An adapter derives its deposit
addresses and signs its payouts with the operator's seed (``keystore(gateway, network)``), and its CLI
commands load the secrets they sign with; chains/ is not scanned.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "plugins"
# Names that hold or hand out secret material: as an attribute, a name, or a name imported.
SECRET_NAMES = {"require_secrets", "jwt_secret", "seed_material", "receipt_key", "load_secrets", "keystore",
                "SeedKeyStore", "mnemonic_to_seed", "seed_from_secret", "seed_from_hex", "Secrets"}
SECRET_ATTRIBUTES = SECRET_NAMES | {"secrets"}  # ``gateway.secrets``; a bare ``secrets`` is the stdlib module


def _purpose_offence(call: ast.Call, namespace: str) -> str | None:
    """Why a ``derived_key(gateway, purpose)`` call is refused, or None: a literal in ``namespace/``."""
    purpose = call.args[1] if len(call.args) >= 2 else next(
        (kw.value for kw in call.keywords if kw.arg == "purpose"), None)
    if not isinstance(purpose, ast.Constant) or not isinstance(purpose.value, str):
        return "derived_key(...) names its purpose as a string literal"
    if not purpose.value.startswith(f"{namespace}/"):
        return f"derived_key(..., {purpose.value!r}): a plugin asks for its own namespace, '{namespace}/...'"
    return None


def offences(source: str, namespace: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every read of secret material in a plugin named ``namespace``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in SECRET_ATTRIBUTES:
            found.append((node.lineno, f".{node.attr}: use derived_key(gateway, '{namespace}/<purpose>')"))
        elif isinstance(node, ast.Name) and node.id in SECRET_NAMES:
            found.append((node.lineno, f"{node.id}: use derived_key(gateway, '{namespace}/<purpose>')"))
        elif isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, f"imports {alias.name}") for alias in node.names
                         if alias.name in SECRET_NAMES)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            why = _purpose_offence(node, namespace) if name == "derived_key" else None
            if why is not None:
                found.append((node.lineno, why))
    return found


def scan(plugins: Path = PLUGINS) -> dict[str, list[tuple[int, str]]]:
    """Offences per file under ``plugins``, each plugin's namespace its package's name."""
    report = {}
    for path in sorted(plugins.rglob("*.py")):
        relative = path.relative_to(plugins)
        if len(relative.parts) < 2:  # plugins/__init__.py: no plugin's
            continue
        found = offences(path.read_text(encoding="utf-8"), relative.parts[0])
        if found:
            report[str(path.relative_to(ROOT))] = found
    return report


def test_no_plugin_reads_the_secrets():
    report = scan()
    assert report == {}, "\n".join(f"{path}:{line}: {what}" for path, found in report.items()
                                    for line, what in found)


def test_the_scan_sees_each_way_a_plugin_reached_the_secrets():
    """The scan itself can fail: each form the plugins used before issue 44 is reported (one per line),
    a plugin's own derived key and the stdlib ``secrets`` module are not."""
    old = textwrap.dedent('''
        key = hmac.new(gateway.require_secrets().jwt_secret, b"label", hashlib.sha256).digest()
        seed = gateway.secrets.seed_material
        store = keystore(gateway, "mainnet")
        from ...api.addresses import SeedKeyStore
        gateway.secrets = load_secrets(gateway.config)
        sign = app.secrets.receipt_key
        derived_key(gateway, "dashboard/session")
        derived_key(gateway, PURPOSE)
        derived_key(gateway, purpose="core/payout-binding")
    ''')
    assert sorted({line for line, _ in offences(old, "telegram")}) == list(range(2, 11))
    allowed = textwrap.dedent('''
        import secrets
        nonce = secrets.token_urlsafe(16)
        key = derived_key(gateway, "telegram/link-token")
        key = derived_key(gateway, purpose="telegram/miniapp-session")
    ''')
    assert offences(allowed, "telegram") == []


def test_the_plugins_that_signed_with_the_jwt_secret_now_ask_for_their_own_keys():
    """Before issue 44, 8 files of 3 plugins (dashboard, oidc, telegram) read the secrets; their purposes
    now read as derived_key calls in their namespace (the scan above would refuse any other)."""
    purposes = {}
    for path in sorted(PLUGINS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "derived_key"
                    and isinstance(node.args[1], ast.Constant)):
                purposes[node.args[1].value] = path.relative_to(PLUGINS).parts[0]
    before = {"dashboard/session": "dashboard", "dashboard/payout-review": "dashboard",
              "oidc/login-state": "oidc", "telegram/link-token": "telegram", "telegram/miniapp-session": "telegram"}
    assert before.items() <= purposes.items()
