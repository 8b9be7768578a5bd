"""The captcha widget of the sign-in pages: whatever plugin answers ``sign_in_widget``."""

from __future__ import annotations

from typing import Any

from ...core.pages import SignInWidget
from ...core.plugins import call_first


async def widget_for(gateway: Any) -> SignInWidget | None:
    """The widget to render, or None; an answer that is not a ``SignInWidget`` is ignored."""
    widget = await call_first(gateway.pm, "sign_in_widget", gateway=gateway)
    return widget if isinstance(widget, SignInWidget) else None
