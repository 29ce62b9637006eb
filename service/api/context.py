"""The running app's settings and model store, for the blueprints (kept out of the package's __init__, so
that the schemas and limits load without Flask: the batch and file commands read them)."""
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
