"""Structured JSON logs, one object a line, for the service, gunicorn and the bulk scorer.

A cluster's log pipeline (Loki, Cloud Logging, Elasticsearch) indexes JSON fields without a
parser per format, so every record, gunicorn's access and error logs included, goes through the
same formatter and carries the request ID of the request it belongs to. gunicorn's records keep the
names of a URL's query parameters, never their values (QueryValuesFilter).
"""
from __future__ import annotations

import json
import logging
import re
import sys
import traceback
from datetime import datetime, timezone
from typing import Any, TextIO

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged, but for
# uvicorn's `color_message`, the message again with a terminal's colour codes.
_STANDARD = frozenset(vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None))) | {
    "message", "asctime", "request_id", "taskName", "color_message"}

# gunicorn access-log atoms (gunicorn/glogging.py Logger.atoms) -> our field names.
_ACCESS_FIELDS = {"h": "remote", "m": "method", "U": "path", "q": "query", "s": "status", "B": "bytes",
                  "a": "user_agent"}

_HANDLER_MARK = "_dialscore_json"

# gunicorn's access-log atoms that carry a URL (the request line, the referer) or a query string, the
# environ's included (`{name}e`): a token pasted into a URL would otherwise be logged verbatim.
_URL_ATOMS = ("r", "f", "{referer}i", "{raw_uri}e", "{http_referer}e", "{request_uri}e")
_QUERY_ATOMS = ("q", "{query_string}e")
_QUERY = re.compile(r"\?([^\s#'\"]*)")
_FRAGMENT = re.compile(r"#[^\s'\"]*")


def query_names(query: str) -> str:
    """A query string's parameter names in order, without their values: `a=1&token=x` -> `a&token`."""
    return "&".join(part.split("=", 1)[0] for part in query.split("&") if part)


def without_query_values(text: str) -> str:
    """`text` (a URL, a request line, a message quoting one) with every query value and fragment dropped:
    `GET /models?token=x HTTP/1.1` -> `GET /models?token HTTP/1.1`."""
    return _QUERY.sub(lambda match: "?" + query_names(match.group(1)), _FRAGMENT.sub("", text))


class QueryValuesFilter(logging.Filter):
    """Drops query values from gunicorn's records before any handler sees them: the access log's atoms,
    and the error log's messages and arguments, which quote a failed request's URI or request line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            atoms = record.args  # gunicorn's SafeAtoms, changed in place: it answers '-' for absent atoms
            for key in _URL_ATOMS + _QUERY_ATOMS:
                if isinstance(atoms.get(key), str):
                    clean = query_names if key in _QUERY_ATOMS else without_query_values
                    atoms[key] = clean(atoms[key])
        elif record.name == "gunicorn.error":
            if isinstance(record.msg, str):
                record.msg = without_query_values(record.msg)
            if isinstance(record.args, tuple):
                record.args = tuple(without_query_values(a) if isinstance(a, str) else a for a in record.args)
        return True


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
            QueryValuesFilter().filter(record)  # also where the logger was configured without it
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


def log_access(scope: dict[str, Any], status: int, sent: int, seconds: float, request_id: str) -> None:
    """One access-log record of an ASGI request, with the atoms gunicorn's access log had (JsonFormatter)."""
    client = scope.get("client") or ("-",)
    headers = dict(scope["headers"])
    logging.getLogger("gunicorn.access").info('%(h)s "%(m)s %(U)s" %(s)s', {
        "h": client[0], "m": scope["method"], "U": scope["path"], "q": scope.get("query_string", b"").decode("latin-1"),
        "s": status, "B": sent, "a": headers.get(b"user-agent", b"-").decode("latin-1"), "D": int(seconds * 1e6),
        "{x-request-id}o": request_id})


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
    Both gunicorn loggers drop query values before any handler (QueryValuesFilter).
    """
    level = level.upper()
    handler = {"class": "logging.StreamHandler", "formatter": "json", "filters": ["request_id"],
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "service.observability.logs.JsonFormatter"}},
        "filters": {"request_id": {"()": "service.observability.logs.RequestIdFilter"},
                    "query_values": {"()": "service.observability.logs.QueryValuesFilter"}},
        "handlers": {"console": handler, "error_console": dict(handler)},
        "root": {"level": level, "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["console"], "filters": ["query_values"], "propagate": False,
                               "qualname": "gunicorn.error"},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"], "filters": ["query_values"], "propagate": False,
                                "qualname": "gunicorn.access"},
        },
    }
