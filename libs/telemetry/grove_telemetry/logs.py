"""Structured logs: one JSON object per line on stderr, with request and trace IDs.

Every line carries ``service``, ``request_id`` and ``trace_id`` (null outside a
request or trace). Messages are fixed event names; callers pass identifiers and counts
as fields, never note content, queries, tokens or keys. Exceptions are logged by type
and stack frames only: an exception's message may quote the data that caused it.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace

#: The current request's ID, set by the HTTP middleware for the request's duration.
REQUEST_ID: ContextVar[str | None] = ContextVar("grove_request_id", default=None)


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON line."""

    def __init__(self, service: str = "grove") -> None:
        super().__init__()
        self.service = service

    def format(self, record: logging.LogRecord) -> str:
        span = trace.get_current_span().get_span_context()
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "service": self.service,
            "pid": record.process,
            "logger": record.name,
            "event": record.getMessage(),
            "request_id": REQUEST_ID.get(),
            "trace_id": format(span.trace_id, "032x") if span.is_valid else None,
        }
        entry.update(getattr(record, "fields", {}))
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            entry["error"] = type(error).__name__
            entry["stack"] = traceback.format_tb(error.__traceback__)
        return json.dumps(entry, default=str)


def configure_logging(service: str, level: str = "INFO") -> None:
    """Send every logger's records to stderr as JSON lines (replacing other handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)


def gunicorn_logconfig(service: str) -> dict[str, Any]:
    """gunicorn's ``logconfig_dict``: its own logs as JSON; no access log (it has paths)."""
    formatter = {"()": JsonFormatter, "service": service}
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": formatter},
        "handlers": {"stderr": handler},
        "root": {"level": "INFO", "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": "CRITICAL", "handlers": [], "propagate": False},
        },
    }


def log(logger: logging.Logger, event: str, level: int = logging.INFO, **fields: object) -> None:
    """Log ``event`` with structured ``fields`` (identifiers and counts only)."""
    logger.log(level, event, extra={"fields": fields})
