"""The built-in chain plugins' address families, for key tests that need no gateway.

Collected through the ``register_address_families`` hook of the installed
``orbchain`` entry points, exactly as a gateway collects them.
"""

from __future__ import annotations

from functools import lru_cache

from orbchain.core.keys import AddressFamily, AddressFamilyRegistry
from orbchain.core.contract.hook_caller import HookCalls
from orbchain.core.contract.plugins import get_plugin_manager


@lru_cache(maxsize=1)
def builtin_families() -> AddressFamilyRegistry:
    registry = AddressFamilyRegistry()
    pm = get_plugin_manager()
    HookCalls(pm).register(pm.hook.register_address_families, registry=registry, gateway=None)
    registry.check_complete()
    return registry


def get_family(name: str, network: str = "mainnet") -> AddressFamily:
    return builtin_families().require(name, network)


def validate_address(name: str, address: object, network: str = "mainnet") -> str:
    return builtin_families().validate(name, address, network)


def families(network: str = "mainnet") -> tuple[AddressFamily, ...]:
    return builtin_families().families(network)
