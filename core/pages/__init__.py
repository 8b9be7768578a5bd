"""Hosted-page services: branding, a public form's check and widget, QR codes."""
