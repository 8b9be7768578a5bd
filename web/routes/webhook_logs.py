"""Routes: webhook_logs (being built)."""

from aiohttp import web

routes = web.RouteTableDef()
