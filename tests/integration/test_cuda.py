"""The CUDA path: every served model on CUDAExecutionProvider gives the scores it gives on the CPU.

Skipped where ONNX Runtime has no CUDA provider (CI and the 2-core development machines run the
CPU wheel). On a GPU machine with onnxruntime-gpu, `scripts/gpu-check.sh` runs it for both
encoder precisions (docs/gpu.md). What it guards: a provider that silently falls back to the CPU,
an operator whose CUDA kernel disagrees with the CPU one (GRU, quantised weights, attention), and
padding or batching that behaves differently on the device.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from service.artifacts.manifest import read_manifest
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.scorers.base import Dialogue, Item, Turn
from service.store.model_store import ModelStore

# Skipped with the CPU wheel only: where onnxruntime-gpu is installed, a session that cannot get
# CUDA (no GPU, missing CUDA or cuDNN libraries) is what this test is for, so it fails.
pytestmark = pytest.mark.skipif("CUDAExecutionProvider" not in ort.get_available_providers(),
                                reason="onnxruntime has no CUDA provider here (the CPU wheel)")

STORE = Path(os.environ.get("DIALSCORE_MODEL_STORE", Path(__file__).resolve().parents[2] / "model_store"))
# How far a score may move between devices, as a share of the model's score range. fp32 (the GPU
# image's encoder): cuBLAS and cuDNN only sum in other orders than the CPU's kernels. int8 (the
# committed CPU file): on the CPU, ONNX Runtime rewrites its dequantised MatMuls into MatMulNBits,
# which quantises activations to int8 as well; on CUDA they stay float. That moved MiniLM
# embeddings by up to 5e-3 and -minilm scores by up to 1.5e-2 of their range on an H100. The
# measured figures are in docs/gpu.md.
TOLERANCE = {"fp32": 1e-5, "int8": 3e-2}  # fp32 measured 1e-6 (2e-4 with TF32 on), int8 1.5e-2

LONG = " ".join(["the weather was lovely and we walked along the river for hours"] * 40)
ITEMS = [
    Item(["hi, how are you?"], "fine, thanks. and you?", "good, thank you."),
    Item(["could you pass me the salt?"], "sure, here you go.", "of course, here it is."),
    Item(["where did you go on holiday?", "we went to spain for two weeks.", "how was the weather?"],
         "it was sunny and hot every day.", "lovely, not a single cloud."),
    Item(["what do you do for a living?"], "", "i am a teacher."),
    Item(["tell me about your weekend."], LONG, "we went hiking in the hills."),
    Item(["¿hablas español?", "un poco, ¿y tú?"], "sí, claro 😀 — 日本語も少し", "yes, a little."),
    Item([LONG, "and then?"], "then we went home.", "we drove back in the evening."),
    Item(["i don't know."], "i don't know.", "i don't know."),
]
DIALOGUES = [
    Dialogue([Turn("user", "hi! how was your day?"), Turn("bot", "great, i went hiking. do you like hiking?"),
              Turn("user", "haha yes, i love it"), Turn("bot", "that's wonderful!")]),
    Dialogue([Turn("user", "hello"), Turn("bot", "i don't know."), Turn("user", "what?"), Turn("bot", "i don't know.")]),
]


def _load(providers: tuple[str, ...], precision: str) -> ModelStore:
    store = ModelStore(STORE, Runtime(RuntimeSettings(providers=providers, intra_op_threads=1,
                                                      encoder_precision=precision)))
    store.load()
    assert not store.failures, store.failures
    return store


def _fp32_built() -> bool:
    return "encoder-fp32.onnx" in read_manifest(STORE / "minilm-l6").files


@pytest.fixture(scope="module", params=["int8", "fp32"])
def stores(request: pytest.FixtureRequest) -> tuple[ModelStore, ModelStore, str]:
    if request.param == "fp32" and not _fp32_built():
        pytest.skip("fp32 encoder not built (make encoder-fp32)")
    cpu = _load(("CPUExecutionProvider",), request.param)
    return cpu, _load(("CUDAExecutionProvider", "CPUExecutionProvider"), request.param), request.param


def _inputs(kind: str) -> list:
    return DIALOGUES if kind == "dialogue" else ITEMS


def test_every_onnx_model_runs_on_cuda(stores: tuple[ModelStore, ModelStore, str]) -> None:
    _, cuda, _ = stores
    on_onnx = {name: s.providers() for name, s in cuda.scorers.items() if s._sessions()}
    assert on_onnx, "no ONNX-backed model is served"
    for name, providers in on_onnx.items():
        assert providers[0] == "CUDAExecutionProvider", (name, providers)


def test_cuda_scores_match_the_cpu(stores: tuple[ModelStore, ModelStore, str]) -> None:
    cpu, cuda, precision = stores
    assert set(cpu.scorers) == set(cuda.scorers)
    worst: dict[str, float] = {}
    for name, scorer in cpu.scorers.items():
        items = _inputs(scorer.kind)
        on_cpu = np.array(scorer.score(items).scores)
        on_gpu = np.array(cuda.scorers[name].score(items).scores)
        low, high = scorer.manifest.score_range
        worst[name] = float(np.max(np.abs(on_cpu - on_gpu)) / (high - low))
    print(f"{precision}: largest |cuda - cpu| / score range:", {k: f"{v:.1e}" for k, v in sorted(worst.items())})
    assert all(v <= TOLERANCE[precision] for v in worst.values()), worst


def test_cuda_scores_do_not_depend_on_the_batch(stores: tuple[ModelStore, ModelStore, str]) -> None:
    _, cuda, precision = stores
    worst: dict[str, float] = {}
    for name, scorer in cuda.scorers.items():
        items = _inputs(scorer.kind)
        together = np.array(scorer.score(items).scores)
        alone = np.array([scorer.score([item]).scores[0] for item in items])
        low, high = scorer.manifest.score_range
        worst[name] = float(np.max(np.abs(together - alone)) / (high - low))
    print(f"{precision}: largest |batch - alone| / score range on CUDA:", {k: f"{v:.1e}" for k, v in sorted(worst.items())})
    assert all(v <= 1e-5 for v in worst.values()), worst  # measured 5e-7
