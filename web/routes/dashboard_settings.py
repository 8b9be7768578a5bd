"""Routes: dashboard_settings (being built)."""

from aiohttp import web

routes = web.RouteTableDef()
