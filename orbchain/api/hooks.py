"""``orbchain.api.hooks``: the registries the ``register_*`` hooks hand a plugin, to annotate them.

A hook implementation is typed as its spec is (core/contract/hookspecs.py; tests/unit/test_hook_impls.py
compares them); the registries are the types a plugin receives but never builds, so they live here
rather than in ``orbchain.api`` itself.
"""

from ..core.contract.registries import (
    AssetRegistry,
    ChainRegistry,
    CommandRegistry,
    DashboardRegistry,
    EventKindRegistry,
    HookspecRegistry,
    JobRegistry,
    OperationRegistry,
    PaymentFieldRegistry,
    PriceSourceRegistry,
    RouteRegistry,
    ScopeRegistry,
)
from ..core.infra.migrate import MigrationRegistry

__all__ = [
    "AssetRegistry", "ChainRegistry", "CommandRegistry", "DashboardRegistry", "EventKindRegistry", "HookspecRegistry",
    "JobRegistry", "MigrationRegistry", "OperationRegistry", "PaymentFieldRegistry", "PriceSourceRegistry",
    "RouteRegistry", "ScopeRegistry",
]
