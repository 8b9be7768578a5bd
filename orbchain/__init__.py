"""Orbchain: a self-hosted crypto payment gateway.

The source tree keeps the design card's top-level folders (``core/``,
``chains/``, ``plugins/``, ``web/``, ``scheduler/``, ``migrations/``); packaging
maps them under this one import name (``orbchain.core`` ...), so installing
Orbchain never puts generic names such as ``core`` or ``web`` on ``sys.path``.
"""

__version__ = "0.1.0"
