"""The heads on turn vectors: exact padding, ONNX parity, context texts, copy penalties."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from service.scorers.heads import context_texts  # noqa: E402
from training.core.turn_heads import DIM, POOLINGS  # noqa: E402
from training.core.turn_heads import check_turn_head as check_parity  # noqa: E402
from training.core.turn_heads import export_turn_head as export_head  # noqa: E402
from training.train_minilm import HEADS  # noqa: E402


def _unit(*shape: int) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(*shape), dim=-1)


@pytest.mark.parametrize("model", sorted(HEADS))
@pytest.mark.parametrize("pooling", POOLINGS)
def test_padding_does_not_change_scores(model: str, pooling: str) -> None:
    torch.manual_seed(0)
    head = HEADS[model](pooling).eval()
    with torch.no_grad():  # move every parameter off its initial value so the test can fail
        for parameter in head.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    context, response, reference = _unit(1, 3, DIM), _unit(1, DIM), _unit(1, DIM)
    padded = torch.cat([context, _unit(1, 2, DIM)], dim=1)
    extra = (reference,) if head.referenced else ()
    with torch.no_grad():
        alone = head(context, torch.ones(1, 3), response, *extra)
        with_padding = head(padded, torch.tensor([[1.0, 1, 1, 0, 0]]), response, *extra)
    for key in alone:
        torch.testing.assert_close(alone[key], with_padding[key], atol=1e-5, rtol=0)


@pytest.mark.parametrize("model", sorted(HEADS))
def test_onnx_export_matches_torch(model: str, tmp_path) -> None:
    torch.manual_seed(1)
    head = HEADS[model]("attn" if model != "ruber-minilm" else "gru").eval()
    export_head(head, tmp_path / "head.onnx")
    check_parity(head, tmp_path / "head.onnx")  # raises if ONNX Runtime and torch differ


def test_adem_head_returns_the_terms_of_its_score() -> None:
    """/score's details for adem-minilm are these outputs: they must add up to the score."""
    torch.manual_seed(2)
    head = HEADS["adem-minilm"]("attn").eval()
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
        context = _unit(4, 3, DIM)
        response = torch.cat([context[:1, -1], _unit(3, DIM)])  # the first reply copies its last turn
        out = head(context, torch.ones(4, 3), response, _unit(4, DIM))
    assert set(out) == {"score", "s_unref", "s_ref", "copy_penalty"}
    recomposed = head.alpha + head.beta * (out["s_unref"] + out["s_ref"] - out["copy_penalty"])
    torch.testing.assert_close(out["score"], recomposed.detach(), atol=1e-5, rtol=0)
    assert out["copy_penalty"][0] > 0


def test_identity_initialisation_ranks_like_the_cosine() -> None:
    """Before training, AutoJudge's c^T M r with M = I orders replies by cosine to the last turn."""
    head = HEADS["autojudge-minilm"]("last").eval()
    context = _unit(1, 2, DIM)
    replies = _unit(4, DIM)
    with torch.no_grad():
        scores = head(context.expand(4, -1, -1), torch.ones(4, 2), replies)["score"]
    cosines = replies @ context[0, -1]
    assert torch.equal(torch.argsort(scores), torch.argsort(cosines))


def test_context_texts() -> None:
    context = ["a", "b", "c", "d", "e", "f"]
    assert context_texts(context, "last") == ["f"]
    assert context_texts(context, "joined2") == ["e f"]
    assert context_texts(context, "turns") == ["b", "c", "d", "e", "f"]
    assert context_texts([], "turns") == [""]
    with pytest.raises(ValueError):
        context_texts(context, "sideways")


def test_autojudge_head_subtracts_the_copy_penalty_from_a_copy_of_the_last_turn() -> None:
    """score = alpha + beta (c^T M r - gamma' max(0, cos(last, r) - tau')), at the initial values alpha 3,
    beta 1, M = I, gamma' = softplus(5), tau' = sigmoid(1.1): a reply that copies the last turn (cos 1)
    scores 3 + (1 - penalty), below the 4 the bare c^T M r would give."""
    import math

    head = HEADS["autojudge-minilm"]("last").eval()
    context = _unit(1, 2, DIM)
    with torch.no_grad():
        copy = head(context, torch.ones(1, 2), context[:, -1])["score"].item()
    penalty = math.log1p(math.exp(5.0)) * (1.0 - 1.0 / (1.0 + math.exp(-1.1)))
    assert penalty > 1.0
    assert copy == pytest.approx(3.0 + 1.0 - penalty, abs=1e-5)


def test_ruber_head_copy_penalty_is_fixed_at_gamma_40_and_not_trained() -> None:
    """RuberHead's copy penalty is a constant (gamma 40): trained, negative sampling moved it out of the way."""
    head = HEADS["ruber-minilm"]("last")
    assert torch.nn.functional.softplus(head.copy.gamma).item() == pytest.approx(40.0, abs=1e-6)
    context = _unit(1, 1, DIM)
    out = head(context, torch.ones(1, 1), context[:, -1], _unit(1, DIM))
    out["score"].sum().backward()
    assert head.copy.gamma.grad is None and head.copy.tau.grad is None
    assert head.M.grad is not None  # the rest does learn from the same backward pass
