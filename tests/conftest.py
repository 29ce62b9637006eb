"""Shared fixtures: apps on temporary copies of the committed model store."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MODEL_STORE = REPO / "model_store"
BASELINES = ("bleu4", "rouge-l", "length", "emb-average", "emb-extrema", "emb-greedy")


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
