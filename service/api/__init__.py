"""Thin blueprints: parse and validate, call service.handlers, serialise."""
from __future__ import annotations

import json
from typing import Any

from flask import current_app, request
from marshmallow import Schema, ValidationError

from service.config import Settings
from service.errors import BadJson, InvalidRequest
from service.schemas import flatten_messages
from service.store import ModelStore


def settings() -> Settings:
    return current_app.config["SETTINGS"]


def store() -> ModelStore:
    return current_app.extensions["dialscore.store"]


def load_body(schema: Schema) -> dict[str, Any]:
    """The request's JSON object validated by `schema`: 400 if not a JSON object, 422 if invalid."""
    raw = request.get_data(cache=True)  # over MAX_CONTENT_LENGTH raises 413 here
    if not raw.strip():
        raise BadJson("The request body is empty; send a JSON object.")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadJson(f"The request body is not valid JSON: {exc}.") from None
    if not isinstance(data, dict):
        raise BadJson(f"The request body must be a JSON object, not a {type(data).__name__}.")
    try:
        return schema.load(data)
    except ValidationError as exc:
        raise InvalidRequest("The request does not match the schema; see details for each field.",
                             flatten_messages(exc.messages)) from None
