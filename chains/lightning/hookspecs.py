"""The hook the ``lightning`` plugin offers other plugins: Lightning node backends.

Declared by the plugin itself (``register_hookspecs``), so the core names no
Lightning backend. A backend plugin implements it with
``@hookimpl(optionalhook=True)`` and still loads when the ``lightning``
plugin is blocked. See docs/plugins.md and docs/lightning.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...api import hookspec

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ...api import Gateway
    from .backend import LightningBackendRegistry


@hookspec
def register_lightning_backends(registry: "LightningBackendRegistry", gateway: "Gateway") -> None:
    """Contribute Lightning node backends to the ``lightning`` plugin.

    Called by the ``lightning`` plugin while it registers its chain, only
    when ``[plugin.lightning] backend`` is set. Call ``registry.add(name,
    factory)`` where ``factory(settings)`` returns an
    ``orbchain.chains.lightning.backend.LightningBackend`` built from the
    plugin's validated ``LightningSettings``; the operator picks one by
    ``name``. A name added twice fails. Return nothing.
    """
