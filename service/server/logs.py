"""Structured JSON logs, one object a line, for the service, gunicorn and the bulk scorer.

A cluster's log pipeline (Loki, Cloud Logging, Elasticsearch) indexes JSON fields without a
parser per format, so every record, gunicorn's access and error logs included, goes through the
same formatter and carries the request ID of the request it belongs to.
"""
from __future__ import annotations

import json
import logging
import sys
import traceback
from datetime import datetime, timezone
from typing import Any, TextIO

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))) | {
    "message", "asctime", "request_id", "taskName"}

# gunicorn access-log atoms (gunicorn/glogging.py Logger.atoms) -> our field names.
_ACCESS_FIELDS = {"h": "remote", "m": "method", "U": "path", "q": "query", "s": "status", "B": "bytes",
                  "a": "user_agent"}

_HANDLER_MARK = "_dialscore_json"


def current_request_id() -> str | None:
    """The request ID of the Flask request being served, or None outside a request."""
    try:
        from flask import g, has_request_context
    except ImportError:  # the formatter is also used where Flask is not imported
        return None
    if not has_request_context():
        return None
    return g.get("request_id")


class RequestIdFilter(logging.Filter):
    """Stamps `request_id` on every record logged while a request is served (else keeps '-')."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = current_request_id() or "-"
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request_id and any `extra` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
        }
        access = record.name == "gunicorn.access" and isinstance(record.args, dict)
        if access:
            atoms = record.args
            entry["message"] = f"{atoms.get('m', '-')} {atoms.get('U', '-')} {atoms.get('s', '-')}"
            for atom, name in _ACCESS_FIELDS.items():
                value = atoms.get(atom)
                if value not in (None, "-", ""):
                    entry[name] = _number(value) if name in ("status", "bytes") else value
            if atoms.get("D") not in (None, "-"):
                entry["duration_ms"] = round(int(atoms["D"]) / 1000.0, 3)
            entry["request_id"] = atoms.get("{x-request-id}o") or atoms.get("{x-request-id}i") or "-"
        else:
            entry["message"] = record.getMessage()
            entry["request_id"] = getattr(record, "request_id", None) or current_request_id() or "-"
            for key, value in vars(record).items():
                if key not in _STANDARD and not key.startswith("_"):
                    entry[key] = value
        if record.exc_info:
            entry["exc_info"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        if record.stack_info:
            entry["stack_info"] = record.stack_info
        return json.dumps(entry, default=str, ensure_ascii=False)


def _number(value: Any) -> Any:
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> logging.Handler:
    """Send the root logger's records, as JSON, to `stream` (stderr); idempotent.

    Replaces only the handler this function installed before, so that pytest's capture
    handlers and gunicorn's own configuration stay in place.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    setattr(handler, _HANDLER_MARK, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def gunicorn_logconfig(level: str = "INFO") -> dict[str, Any]:
    """A `logconfig_dict` for gunicorn.conf.py: gunicorn's error and access logs and the app's, as JSON.

    The access log is emitted after the response, outside the app context, so its request ID is
    read from the response's X-Request-ID header (which service/api/middleware.py always sets).
    """
    level = level.upper()
    handler = {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_id"],
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "service.server.logs.JsonFormatter"}},
        "filters": {"request_id": {"()": "service.server.logs.RequestIdFilter"}},
        "handlers": {"console": handler, "error_console": dict(handler)},
        "root": {"level": level, "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["console"], "propagate": False, "qualname": "gunicorn.error"},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "propagate": False,
                                "qualname": "gunicorn.access"},
        },
    }
