"""Process logging: plain text by default, one JSON object per line when configured.

``configure_logging`` installs one handler on the root logger with either
format. Every record carries the request it was logged under: the edge
middleware puts a small dict (``request_id``, later ``merchant_id``) into
:data:`request_context` when a request arrives, and :class:`RequestContextFilter`
copies it onto each record, so a line logged deep inside a service, or by a
task the request started, names its request without anyone passing it down.

Secrets never reach a log line because no code logs them (webhook
previews are redacted, keys are shown once in responses only);
``tests/test_logs.py`` scans the logs of a whole journey for every secret
it created, in both formats.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from contextvars import ContextVar
from typing import Any, TextIO

from .config import LoggingConfig

request_context: ContextVar[dict[str, str] | None] = ContextVar("orbchain_request_context", default=None)

ACCESS_LOGGER = "orbchain.access"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Attributes every LogRecord has; anything else was passed as ``extra`` and belongs in the JSON object.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_OURS = "_orbchain_handler"
SQL_LOGGERS = ("aiosqlite",)


class RequestContextFilter(logging.Filter):
    """Copies the current request's ids onto each record (absent outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = request_context.get()
        if context:
            for key, value in context.items():
                if not hasattr(record, key):
                    setattr(record, key, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request ids, extras, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """The classic line, with ``[request <id>]`` appended when the record has one."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None)
        return f"{line} [request {request_id}]" if request_id and "request " not in record.getMessage() else line


def make_handler(config: LoggingConfig, stream: TextIO | None = None) -> logging.Handler:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if config.format == "json" else TextFormatter())
    handler.addFilter(RequestContextFilter())
    return handler


def configure_logging(config: LoggingConfig, *, verbose: bool = False, stream: TextIO | None = None,
                      force: bool = True) -> None:
    """Install (or replace) this module's handler on the root logger; handlers others installed stay.

    With ``force=False`` (the CLI) a root logger that a host already configured (a test runner, an
    embedding application) is left alone, as ``logging.basicConfig`` does.
    """
    root = logging.getLogger()
    if not force and any(not getattr(h, _OURS, False) for h in root.handlers):
        return
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
    handler = make_handler(config, stream)
    setattr(handler, _OURS, True)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else getattr(logging, config.level.upper()))
    if not verbose:
        # One line per job run and per connection is noise for operators.
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
    # aiosqlite logs every statement with its parameters at DEBUG: stored webhook and TOTP secrets
    # among them. Never, not even with --verbose.
    for chatty in SQL_LOGGERS:
        logging.getLogger(chatty).setLevel(logging.INFO)
