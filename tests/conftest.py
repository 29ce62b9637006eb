"""Shared fixtures: apps on temporary copies of the committed model store; the real data, or a skip.

Tests that read the real corpora (../shared/data, or DIALSCORE_DATA_DIR: docs/data.md) carry the
`data` marker, or ask for the `data_dir` fixture, which adds it; without the folder they skip, all
with one reason, so a bare clone's suite passes and says what it left out.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from training.data.corpora import DEFAULT_DATA_DIR

REPO = Path(__file__).resolve().parent.parent
MODEL_STORE = REPO / "model_store"
BASELINES = ("bleu4", "rouge-l", "length", "emb-average", "emb-extrema", "emb-greedy")
NO_DATA = (f"needs the real data: set DIALSCORE_DATA_DIR to its folder (looked in {DEFAULT_DATA_DIR}; "
           "where it comes from: docs/data.md)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture: a data test's fixtures read the data too."""
    if item.get_closest_marker("data") and not DEFAULT_DATA_DIR.is_dir():
        pytest.skip(NO_DATA)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data's folder (the training loaders' default); tests asking for it skip where it is missing."""
    return DEFAULT_DATA_DIR


def copy_store(target: Path, names: tuple[str, ...] | None = None) -> Path:
    """Copy store folders (and the components they use) so a test may alter them; with no names, every
    folder of the committed store, each of which must hold its manifest (a lost one fails, not skips)."""
    import json

    target.mkdir(parents=True, exist_ok=True)
    wanted = set(names) if names else {p.name for p in MODEL_STORE.iterdir() if p.is_dir()}
    for name in list(wanted):
        manifest = json.loads((MODEL_STORE / name / "manifest.json").read_text())
        wanted.update(manifest.get("uses", []))
    for name in wanted:
        shutil.copytree(MODEL_STORE / name, target / name)
    return target


def with_trained_items(store: Path, model: str, items: list[tuple[list[str], str]]) -> None:
    """Give a store folder the keys of (context, reply) `items`, as `python -m training trained-items` writes them."""
    import json

    import numpy as np

    from service.artifacts.manifest import sha256_file
    from service.store import trained_items

    folder = store / model
    np.save(folder / trained_items.FILE, trained_items.hashes(trained_items.item_key(c, r) for c, r in items))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][trained_items.FILE] = {"sha256": sha256_file(folder / trained_items.FILE)}
    manifest["trained_items"] = {"file": trained_items.FILE, "unit": trained_items.UNIT, "split": "train",
                                 "sets": {"a-set": len(items)}}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def metric_sample(client, sample: str) -> float:
    """The value of one Prometheus sample (name and labels, as /metrics writes them); 0 before it exists."""
    text = client.get("/metrics").get_data(as_text=True)
    lines = [line for line in text.splitlines() if line.startswith(sample + " ")]
    return float(lines[0].split()[-1]) if lines else 0.0


@pytest.fixture(scope="session")
def baseline_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_store(tmp_path_factory.mktemp("store"), BASELINES)


@pytest.fixture(scope="session")
def baseline_app(baseline_store: Path):
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True})
    app.config["TESTING"] = True
    return app


@pytest.fixture()
def client(baseline_app):
    return baseline_app.test_client()


@pytest.fixture(scope="session")
def full_app():
    """Every model committed in model_store/, as `make run` serves it."""
    from service.app import create_app

    app = create_app({"model_store": MODEL_STORE, "load_sync": True})
    app.config["TESTING"] = True
    return app
