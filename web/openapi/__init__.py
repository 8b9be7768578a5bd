"""The OpenAPI 3.1 document of the whole API, served at ``GET /openapi.json``.

Built in Python from small pieces: ``schemas`` (records of SPEC 2 and the
envelope), ``operations`` (one ``Op`` per route and the error statuses each
kind of route can answer), one ``paths_*`` table per area of the API, and
``document`` to assemble them. ``tests/test_openapi.py`` keeps it true: every
route the app registers must be documented (and the reverse), and real
responses are validated against it. Plugins document their own routes with
the ``register_openapi`` hook, using ``Op`` and the schema helpers exported here.
"""

from .document import all_operations, app_routes, build_document
from .operations import Op, Param, html, redirect
from .schemas import envelope, obj, ref

__all__ = ["Op", "Param", "all_operations", "app_routes", "build_document", "envelope", "html", "obj", "redirect",
           "ref"]
