"""The VHRED encoder: exact padding masks, the training objective, pre-training and ONNX export."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import torch

from tests.hred_tiny import TINY, pretrain_tiny
from training.encoders.hred import train as pretrain
from training.encoders.hred import tokenizer as bpe
from training.core.bigru import BiGRU
from training.encoders.hred.model import VHRED, VHREDConfig, load_checkpoint
from training.core.onnx_export import check_parity
from training.encoders.hred.export import export_hred


torch.set_num_threads(1)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return pretrain_tiny(tmp_path_factory.mktemp("vhred"))


def test_bigru_equals_torch_bidirectional_gru_with_packing() -> None:
    torch.manual_seed(0)
    ours = BiGRU(5, 4)
    reference = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(ours.forward_gru, name).copy_(getattr(reference, name))
            getattr(ours.backward_gru, name).copy_(getattr(reference, name + "_reverse"))
    x = torch.randn(3, 7, 5)
    lengths = torch.tensor([7, 2, 4])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    _, h = reference(packed)
    expected = torch.cat([h[0], h[1]], dim=-1)
    assert torch.allclose(ours(x, lengths), expected, atol=1e-6)


def test_padding_never_changes_an_utterance_vector() -> None:
    torch.manual_seed(1)
    model = VHRED(VHREDConfig(vocab_size=50, **TINY)).eval()
    alone = model.utterance_encoder(torch.tensor([[5, 6, 7]]), torch.tensor([3]))
    padded = torch.tensor([[5, 6, 7, 0, 0, 0], [9, 9, 9, 9, 9, 9]])
    batched = model.utterance_encoder(padded, torch.tensor([3, 6]))
    assert torch.allclose(alone[0], batched[0], atol=1e-6)
    garbage = padded.clone()
    garbage[0, 3:] = 11  # whatever sits after the length is ignored
    assert torch.allclose(model.utterance_encoder(garbage, torch.tensor([3, 6]))[0], alone[0], atol=1e-6)


def test_objective_is_finite_and_trains() -> None:
    torch.manual_seed(2)
    model = VHRED(VHREDConfig(vocab_size=40, **TINY))
    data = [[[5, 6, 3], [7, 8, 9, 3], [5, 3]], [[10, 11, 3], [12, 3]]]
    batch = pretrain.collate(data)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    first = None
    for _ in range(15):
        out = model(*batch, kl_weight=1.0)
        first = first if first is not None else float(out["loss"].detach())
        optimiser.zero_grad()
        out["loss"].backward()
        optimiser.step()
    assert out["kl"] >= 0 and int(out["tokens"]) == 8
    assert float(out["loss"].detach()) < first / 2


def test_windows_predict_every_turn_after_the_first_once() -> None:
    dialogue = [[i] for i in range(10)]
    windows = pretrain.windows([dialogue], max_turns=4)
    predicted = [turn[0] for w in windows for turn in w[1:]]
    assert predicted == list(range(1, 10)) and all(2 <= len(w) <= 4 for w in windows)


@pytest.mark.data
def test_pretrain_writes_a_checkpoint_tokenizer_and_held_out_perplexity(run) -> None:
    metrics = json.loads((run / "metrics.json").read_text())
    held = metrics["held_out_dailydialog_validation"]
    assert 1 < held["ppl_nll"] <= held["ppl_bound"] < 1000
    model, extra = load_checkpoint(run / "model.pt")
    tokenizer = bpe.load(run / "tokenizer.json")
    assert model.config.vocab_size == tokenizer.get_vocab_size() and extra["steps"] == 12
    ids = tokenizer.encode("word " * 100).ids
    assert len(ids) == TINY["max_tokens"] and ids[-1] == bpe.EOS_ID
    assert tokenizer.encode("").ids == [bpe.EOS_ID]


@pytest.mark.data
def test_export_matches_torch_within_1e_4_at_several_shapes(run, tmp_path) -> None:
    folder = tmp_path / "hred-encoder"
    parity = export_hred(run / "model.pt", run / "tokenizer.json", folder, "2026.11.0")
    assert set(parity) == {"utterance_encoder.onnx", "context_encoder.onnx"}
    assert max(parity.values()) < 1e-4
    for name in parity:  # batch and time (or turns) stay symbolic; only the feature width is fixed
        graph = onnx.load(str(folder / name)).graph
        for value in graph.input:
            dims = value.type.tensor_type.shape.dim
            assert all(d.dim_param for d in dims[:2]), (name, value.name)
    model, _ = load_checkpoint(run / "model.pt")
    long_input = (torch.randint(4, 50, (2, 200)), torch.tensor([200, 150]))  # longer than training saw
    assert check_parity(model.utterance_encoder, folder / "utterance_encoder.onnx", [long_input],
                        ["tokens", "lengths"]) < 1e-4


@pytest.mark.data
def test_parity_check_fails_on_a_different_model(run, tmp_path) -> None:
    folder = tmp_path / "hred-encoder"
    export_hred(run / "model.pt", run / "tokenizer.json", folder, "2026.11.0")
    other = VHRED(load_checkpoint(run / "model.pt")[0].config).eval()
    example = [(torch.tensor([[5, 6, 7]]), torch.tensor([3]))]
    with pytest.raises(RuntimeError):
        check_parity(other.utterance_encoder, folder / "utterance_encoder.onnx", example, ["tokens", "lengths"])


@pytest.mark.data
def test_service_component_reproduces_training_vectors(run, tmp_path) -> None:
    from service.store.registry import component_class
    from service.artifacts.manifest import read_manifest
    from service.artifacts.runtime import Runtime
    from training.encoders.hred.encoder import HREDTextEncoder

    folder = tmp_path / "hred-encoder"
    export_hred(run / "model.pt", run / "tokenizer.json", folder, "2026.11.0")
    component = component_class("hred-encoder")(read_manifest(folder), Runtime())
    ours = HREDTextEncoder.from_run(run)
    contexts = [["hello , how are you ?", "fine ."], ["a"] * 12, [], ["what a lovely day it is " * 9]]
    assert np.abs(component.encode_contexts(contexts) - ours.encode_contexts(contexts)).max() < 1e-4
    replies = ["sure .", "", "no way , really ?"]
    assert np.abs(component.encode_responses(replies) - ours.encode_responses(replies)).max() < 1e-4


@pytest.mark.data
def test_export_serves_the_runs_tokenizer_with_curly_quotes_mapped(run, tmp_path) -> None:
    """The run keeps its tokenizer (the encoder and heads were trained on it); the store's reads ’ as '."""
    from service.store.registry import component_class
    from service.artifacts.manifest import read_manifest
    from service.artifacts.runtime import Runtime
    from training.encoders.hred.encoder import HREDTextEncoder

    folder = tmp_path / "hred-encoder"
    export_hred(run / "model.pt", run / "tokenizer.json", folder, "2026.11.0")
    assert (folder / "tokenizer.json").read_text() == bpe.served(bpe.load(run / "tokenizer.json")).to_str(pretty=True)
    run_tokenizer = bpe.load(run / "tokenizer.json")
    assert run_tokenizer.encode("it’s").ids != run_tokenizer.encode("it's").ids
    component = component_class("hred-encoder")(read_manifest(folder), Runtime())
    ours = HREDTextEncoder.from_run(run)
    curly = [["i think it’s going to rain today.", "she said “no”."]]
    straight = [["i think it's going to rain today.", 'she said "no".']]
    assert np.abs(component.encode_contexts(curly) - ours.encode_contexts(straight)).max() < 1e-4
    assert np.abs(component.encode_contexts(curly) - component.encode_contexts(straight)).max() == 0


@pytest.mark.parametrize("field, value", [("max_turns", 1), ("max_turns", 0), ("context", 0), ("utterance", 2.5),
                                          ("embedding", True), ("word_drop", 1.0), ("word_drop", -0.1)])
def test_config_refuses_sizes_no_model_can_use(field, value) -> None:
    """max_turns 1 would make the windowing loop forever; every bad value names its field."""
    with pytest.raises(ValueError, match=field):
        VHREDConfig(**{field: value})
    with pytest.raises(ValueError, match="max_turns"):
        pretrain.windows([[[1], [2], [3]]], 1)


@pytest.mark.data
def test_a_vocabulary_size_the_tokenizer_cannot_have_is_said(tmp_path) -> None:
    """A vocabulary smaller than BPE can make is a warning in the log, not silence."""
    import json

    from training.encoders.hred import train as pretrain

    out = tmp_path / "small-vocab"
    assert pretrain.main(["--out", str(out), "--steps", "1", "--max-dialogues", "20", "--eval-dialogues", "3",
                          "--vocab-size", "1", "--sources", "dailydialog", "--batch-size", "4",
                          "--config", json.dumps(TINY)]) == 0
    assert "--vocab-size 1: the tokenizer has" in (out / "pretrain.log").read_text()
