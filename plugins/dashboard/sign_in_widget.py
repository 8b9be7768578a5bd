"""The captcha widget of the sign-in pages: whatever plugin answers ``decide_sign_in_widget``."""

from __future__ import annotations

from typing import Any

from ...api import SignInWidget, form_widget


async def widget_for(gateway: Any) -> SignInWidget | None:
    """The widget to render, or None (``form_widget``, shared with public forms)."""
    return await form_widget(gateway)
