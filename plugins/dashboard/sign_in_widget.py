"""The captcha widget of the sign-in pages: whatever plugin answers ``decide_sign_in_widget``."""

from __future__ import annotations

from typing import Any

from ...core import services
from ...core.pages import SignInWidget


async def widget_for(gateway: Any) -> SignInWidget | None:
    """The widget to render, or None (``services.form_widget``, shared with public forms)."""
    return await services.form_widget(gateway)
