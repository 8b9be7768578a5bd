"""``orbchain.api.openapi``: documenting a plugin's routes in ``/openapi.json`` (``register_openapi``).

``Op`` describes one operation; ``obj``, ``array``, ``nullable``, ``ref`` and
``envelope`` build its JSON schemas (``envelope`` wraps data in the SPEC 7
envelope, unlike ``orbchain.api.envelope``, which answers a request);
``html`` and ``redirect`` describe page and redirect responses.
"""

# Operations and their parameters and non-JSON responses.
from ..web.openapi.operations import Op, Param, html, redirect

# JSON schema builders for request and response bodies.
from ..web.openapi.schemas import array, envelope, nullable, obj, ref

__all__ = ["Op", "Param", "array", "envelope", "html", "nullable", "obj", "redirect", "ref"]
