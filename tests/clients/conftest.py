"""The Python client from clients/python/src (not installed), and real servers for it under gunicorn.

`server` has the default limits; `small_server` publishes small ones, so that the client splits batches
that `server` takes whole, and wants a token, as a deployment would. Both serve the committed model store,
less the models these tests do not use.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import MODEL_STORE, REPO
from tests.live_server import RunningServer, running_server

CLIENT_SRC = REPO / "clients" / "python" / "src"
if str(CLIENT_SRC) not in sys.path:
    sys.path.insert(0, str(CLIENT_SRC))

# one of each kind, both encoders, and the re-ranking models
SERVED = "adem,autojudge-minilm,length,mh,ruber,unref-minilm,unref-minilm-commercial"
TOKEN = "client-test-token"
SMALL_LIMITS = {"DIALSCORE_MAX_ITEMS": "4", "DIALSCORE_MAX_CANDIDATES": "3", "DIALSCORE_MAX_BODY_BYTES": "2048",
                "DIALSCORE_MAX_ENCODER_TOKENS": "120", "DIALSCORE_MAX_CHARS": "200"}


@pytest.fixture(scope="session")
def store_link(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed model store through a link in a temporary folder, where the servers write their logs."""
    link = tmp_path_factory.mktemp("client-servers") / "model_store"
    link.symlink_to(MODEL_STORE, target_is_directory=True)
    return link


@pytest.fixture(scope="session")
def server(store_link: Path) -> Iterator[RunningServer]:
    with running_server(store_link, {"DIALSCORE_MODELS": SERVED}, workers=1) as running:
        yield running


@pytest.fixture(scope="session")
def small_server(store_link: Path) -> Iterator[RunningServer]:
    env = {"DIALSCORE_MODELS": SERVED, "DIALSCORE_API_TOKEN": TOKEN, **SMALL_LIMITS}
    with running_server(store_link, env, workers=1) as running:
        yield running
