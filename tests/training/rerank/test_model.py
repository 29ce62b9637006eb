"""The cross-encoder's starting weights, rebuilt from the committed int8 graph, are that graph's encoder."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

from training.rerank.model import from_graph  # noqa: E402
from training.rerank.train import GRAPH  # noqa: E402


def test_the_rebuilt_bert_gives_the_committed_graphs_vectors() -> None:
    model = from_graph(GRAPH).eval()
    ids = np.array([[101, 7592, 2088, 1010, 2129, 2024, 2017, 102], [101, 1045, 2066, 102, 0, 0, 0, 0]], np.int64)
    mask = (ids != 0).astype(np.int64)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # float arithmetic (docs/gpu.md)
    session = ort.InferenceSession(str(GRAPH), options, providers=["CPUExecutionProvider"])
    expected = session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})[0]
    with torch.no_grad():
        hidden = model.bert(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                            token_type_ids=torch.zeros_like(torch.from_numpy(ids))).last_hidden_state
    weights = torch.from_numpy(mask).unsqueeze(-1).float()
    pooled = torch.nn.functional.normalize((hidden * weights).sum(1) / weights.sum(1), dim=1).numpy()
    assert np.abs(pooled - expected).max() < 1e-5
    assert float(model.head.weight.detach().abs().sum()) == 0.0  # every pair starts level


def test_the_device_script_imports_nothing_of_the_service() -> None:
    """The device has torch, transformers, safetensors and onnx, not the service's packages."""
    code = ("import sys, training.rerank.train; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'service', 'scipy', 'onnxruntime', 'flask', "
            "'marshmallow', 'tokenizers', 'sentence_transformers'}))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]"
