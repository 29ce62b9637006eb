"""What the device returns becomes an int8 ONNX store folder whose scores are the trained model's."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

from training.rerank.export import FILE, FILE_LIMIT, export, load_returned  # noqa: E402
from training.rerank.pieces import batch  # noqa: E402
from training.rerank.train import Pack  # noqa: E402

pytestmark = pytest.mark.data


def test_the_exported_graph_scores_real_pairs_as_torch_does(tiny_run: tuple[Path, dict], tiny_pack: Path,
                                                           tmp_path: Path) -> None:
    returned, _ = tiny_run
    out = tmp_path / "rerank-minilm"
    checked = export(returned, out, [str(returned)])
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {FILE, "tokenizer.json"} and (out / "README.md").is_file()
    assert (out / FILE).stat().st_size <= FILE_LIMIT and checked["float_max_abs"] < 1e-4
    model, _ = load_returned(returned)
    pack = Pack.load(tiny_pack)
    a = pack.arrays
    inputs = batch(pack.texts, a["j_context"][:16], a["j_reply"][:16], max_length=128, max_reply=48)
    with torch.no_grad():
        expected = model(**{k: torch.from_numpy(v) for k, v in inputs.items()}).numpy()
    session = ort.InferenceSession(str(out / FILE), providers=["CPUExecutionProvider"])
    got = session.run(["score"], inputs)[0]
    assert np.abs(got - expected).max() < 0.05
    assert np.corrcoef(got, expected)[0, 1] > 0.99 or np.std(expected) < 1e-3


def test_a_missing_part_is_refused(tiny_run: tuple[Path, dict], tmp_path: Path) -> None:
    returned, results = tiny_run
    copy = tmp_path / "returned"
    shutil.copytree(returned, copy)
    (copy / results["weights"]["parts"][-1]).write_bytes(b"")
    with pytest.raises(ValueError, match="sha256"):
        load_returned(copy)
