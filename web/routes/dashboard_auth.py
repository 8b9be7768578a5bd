"""Routes: dashboard_auth (being built)."""

from aiohttp import web

routes = web.RouteTableDef()
