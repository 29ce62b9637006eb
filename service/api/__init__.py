"""The HTTP API: blueprints (health, scoring, analysis) that parse the body, call the data plane
(dataplane.py) and serialise; the body reader, schemas, limits, middleware and OpenAPI document."""
from __future__ import annotations

from flask import current_app

from service.config import Settings
from service.store.model_store import ModelStore


def settings() -> Settings:
    """The app's settings (create_app)."""
    return current_app.config["SETTINGS"]


def store() -> ModelStore:
    """The app's model store (init_store)."""
    return current_app.extensions["dialscore.store"]
