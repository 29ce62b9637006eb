"""Every sentence encoder on both CPU providers: parity with the CPU EP's vectors and batch invariance,
bit-exact on the CPU EP, within the bound docs/api.md states on OpenVINO. OpenVINO's cases skip, saying
why, where the plugin offers no device for this CPU (it serves Intel CPUs only)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.artifacts import openvino
from service.artifacts.manifest import read_manifest
from service.artifacts.providers import CPU, ProviderChoice
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.components.sentence_encoder import SentenceEncoder
from tests.components.test_sentence_encoder import TEXTS, _dialogue_turns, _longer_texts, reference  # noqa: F401

STORE = Path(__file__).resolve().parents[2] / "model_store"
PROVIDERS = (CPU, openvino.EP)
# OpenVINO computes in bf16 where the CPU has it: a vector component may move by this much with its
# batch-mates, and a text's vector stays this near the CPU EP's (the measured figures: docs/api.md).
BATCH_BOUND = 1e-2
PARITY = {"minilm-l6": 0.99, "mpnet-base": 0.999, "mpnet-tiny": 0.99}


def _runtime(provider: str) -> Runtime:
    if provider == openvino.EP and not openvino.plugin().usable:
        pytest.skip(f"OpenVINO: {openvino.plugin().reason}")
    return Runtime(RuntimeSettings(providers=(provider, CPU), intra_op_threads=2, encoder_threads=2))


@pytest.fixture(scope="module")
def tiny_mpnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    from tests.mpnet_tiny import tiny_component

    return tiny_component(tmp_path_factory.mktemp("mpnet"))


def _folder(name: str, request: pytest.FixtureRequest) -> Path:
    if name == "mpnet-tiny":
        return request.getfixturevalue("tiny_mpnet")
    manifest = read_manifest(STORE / name)
    if not manifest.built:
        pytest.skip(f"{name} is not built here ({manifest.build.get('command')})")
    return STORE / name


_served: dict[tuple[str, str], SentenceEncoder] = {}


@pytest.fixture(scope="module", params=["minilm-l6", "mpnet-tiny", "mpnet-base"])
def folder(request: pytest.FixtureRequest) -> Path:
    return _folder(request.param, request)


def _encoder(folder: Path, provider: str) -> SentenceEncoder:
    """One encoder a folder and provider for the module (sessions of mpnet-base take seconds)."""
    key = (str(folder), provider)
    if key not in _served:
        _served[key] = SentenceEncoder(read_manifest(folder), _runtime(provider))
    return _served[key]


def _name(folder: Path) -> str:
    return "mpnet-tiny" if folder.parent.parent != STORE.parent else folder.name


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_encoder_reports_its_provider_and_whether_it_is_bit_exact(folder: Path, provider: str) -> None:
    encoder = _encoder(folder, provider)
    described = encoder.served_files()
    assert described["provider"] == encoder.session.get_providers()[0] == provider
    assert described["bit_exact_across_batches"] == (provider == CPU)
    assert ("compute" in described) == (provider == openvino.EP)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_encoders_vectors_match_the_cpu_eps_and_hold_across_batches(folder: Path, provider: str) -> None:
    encoder = _encoder(folder, provider)
    texts = TEXTS + _longer_texts()
    batched = encoder.encode(texts)
    alone = np.stack([encoder.encode([text])[0] for text in texts])
    if encoder.session.bit_exact_across_batches:
        assert np.array_equal(alone, batched)
    assert np.abs(alone - batched).max() <= BATCH_BOUND
    cosines = (batched * _encoder(folder, CPU).encode(texts)).sum(axis=1)
    assert cosines.min() >= PARITY[_name(folder)]


@pytest.mark.data
def test_minilm_on_openvino_matches_sentence_transformers(request: pytest.FixtureRequest) -> None:
    encoder = _encoder(STORE / "minilm-l6", openvino.EP)  # skips first where OpenVINO is not usable
    expected = request.getfixturevalue("reference")  # sentence-transformers' fp32 vectors
    vectors = encoder.encode(TEXTS + _dialogue_turns())
    assert ((vectors * expected).sum(axis=1)).min() >= 0.99


def test_where_openvino_cannot_build_the_session_the_cpu_ep_serves_the_same_file(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The plugin chosen but offering no device (ONNX Runtime refuses the session options): the encoder
    is served as the CPU EP would serve it by itself, int8-float, and says so."""
    runtime = Runtime(RuntimeSettings(providers=(CPU,), intra_op_threads=1))
    monkeypatch.setattr(runtime, "choice", ProviderChoice([CPU], openvino.EP, "forced for the test"))
    monkeypatch.setattr(openvino, "plugin", lambda: openvino.Plugin(reason="no device"))
    encoder = SentenceEncoder(read_manifest(STORE / "minilm-l6"), runtime)
    assert encoder.session.get_providers()[0] == CPU and encoder.precision == "int8-float"
    assert encoder.chosen_by.endswith("the CPU EP serves it (OpenVINO could not)")
    assert "could not build the session" in caplog.text
    assert np.array_equal(encoder.encode(TEXTS), SentenceEncoder(read_manifest(STORE / "minilm-l6"),
                                                                 _runtime(CPU)).encode(TEXTS))
