"""Next-turn pre-training of the M of the heads on turn vectors: data, objective, hand-over."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from training.data import judgements  # noqa: E402
from training.encoders.minilm.embed import EmbeddingCache, load_encoder  # noqa: E402
from training.adem.model import AdemHead  # noqa: E402
from training.autojudge.model import AutoJudgeHead  # noqa: E402
from training.core.next_turn import NextTurnConfig, corpus_pairs, pretrain_bilinear  # noqa: E402
from training.core.turn_heads import DIM  # noqa: E402
from training.core.turn_training import Config  # noqa: E402
from training.ruber.model import RuberHead  # noqa: E402
from training.train_minilm import train  # noqa: E402


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> EmbeddingCache:
    torch.set_num_threads(1)
    return EmbeddingCache(tmp_path_factory.mktemp("cache"), load_encoder())


@pytest.mark.data
def test_pairs_are_consecutive_turns_with_no_development_query() -> None:
    queries, replies = corpus_pairs(("dailydialog",), max_pairs=300)
    assert len(queries) == len(replies) == 300
    assert len(set(zip(queries, replies))) == 300
    # DailyDialog sentences recur in the DailyDialog-based dev sets: no dev-partition query is kept.
    assert all(judgements.split_of("q:" + judgements.normalise(q)) == "train" for q in queries)
    assert corpus_pairs(("dailydialog",), max_pairs=300) == (queries, replies)
    chitchat_queries, _ = corpus_pairs(("chitchat",), max_pairs=5)
    assert len(chitchat_queries) == 5
    with pytest.raises(ValueError, match="unknown next-turn source"):
        corpus_pairs(("reddit",))


@pytest.mark.data
def test_pretraining_learns_to_pick_the_next_turn(cache: EmbeddingCache) -> None:
    config = NextTurnConfig(epochs=30, batch=32, lr=1e-2, max_pairs=64, sources=("dailydialog",))
    matrix = pretrain_bilinear(cache, config, log=lambda *_: None)
    assert matrix.shape == (DIM, DIM) and not torch.allclose(matrix, torch.eye(DIM))
    queries, replies = corpus_pairs(config.sources, config.max_pairs)
    contexts, answers = torch.from_numpy(cache.get(queries)), torch.from_numpy(cache.get(replies))

    def top1(m: torch.Tensor) -> float:
        return float(((contexts @ m @ answers.T).argmax(dim=1) == torch.arange(len(queries))).float().mean())

    # The pairs it saw: the own next turn is picked among all 64 far more often than by the cosine.
    assert top1(matrix) > max(0.9, top1(torch.eye(DIM)) + 0.2)


@pytest.mark.parametrize("head_class", [AutoJudgeHead.on_turns, AdemHead.on_turns, RuberHead.on_turns])
def test_start_from_sets_m_and_where_the_l1_term_pulls_it(head_class) -> None:
    head = head_class()
    assert head.regulariser().item() == 0.0
    matrix = torch.eye(DIM) + 0.01 * torch.randn(DIM, DIM)
    head.start_from(matrix)
    assert torch.equal(head.M.data, matrix) and head.regulariser().item() == 0.0
    matrix.zero_()  # the head keeps its own copy
    assert head.regulariser().item() == 0.0
    if head_class == AdemHead.on_turns:  # N (reference-reply) is not pre-trained: still pulled to the identity
        head.N.data.add_(0.5)
        assert head.regulariser().item() == pytest.approx(0.5)


@pytest.mark.data
@pytest.mark.parametrize("model,encoding,pooling", [("autojudge-minilm", "last", "last"),
                                                    ("adem-minilm", "turns", "attn"),
                                                    ("ruber-minilm", "last", "last")])
def test_the_ratings_fit_starts_from_the_pretrained_matrix(model: str, encoding: str, pooling: str,
                                                           cache: EmbeddingCache) -> None:
    tiny = {"epochs": 1, "batch": 16, "max_judged": 6, "negatives_contexts": 4, "ruber_pairs": 12,
            "encoding": encoding, "pooling": pooling}
    trained = train(Config(model=model, next_turn_epochs=2, next_turn_max_pairs=48, **tiny), cache,
                    log=lambda *_: None)
    assert not torch.allclose(trained.prior, torch.eye(DIM))
    plain = train(Config(model=model, next_turn_epochs=0, **tiny), cache, log=lambda *_: None)
    assert torch.equal(plain.prior, torch.eye(DIM))


def test_exported_graph_has_no_trace_of_the_prior(cache: EmbeddingCache, tmp_path: Path) -> None:
    """The prior only steers training: the served head is c^T M r as before (same inputs, one M)."""
    import onnx

    from training.core.turn_heads import export_turn_head as export_head

    head = AutoJudgeHead.on_turns()
    head.start_from(torch.eye(DIM) * 2)
    export_head(head, tmp_path / "head.onnx")
    graph = onnx.load(str(tmp_path / "head.onnx")).graph
    assert [i.name for i in graph.input] == ["context", "context_mask", "response"]
    assert sum(1 for t in graph.initializer if list(t.dims) == [DIM, DIM]) == 1


@pytest.mark.data
def test_the_objective_is_the_symmetric_in_batch_softmax(cache: EmbeddingCache) -> None:
    """CLIP's loss, by hand: logits L = e^3 C A^T (the learned scale starts at e^3, M at I), and the loss
    is the mean of the cross-entropy of each context over the replies (rows) and of each reply over the
    contexts (columns). With lr 0 nothing moves, so the first epoch's logged loss is that number."""
    import numpy as np
    from scipy.special import logsumexp

    config = NextTurnConfig(epochs=1, batch=8, lr=0.0, max_pairs=8, sources=("dailydialog",))
    lines: list[str] = []
    pretrain_bilinear(cache, config, seed=7, log=lines.append)
    queries, replies = corpus_pairs(config.sources, config.max_pairs)
    logits = np.exp(3.0) * cache.get(queries).astype(np.float64) @ cache.get(replies).astype(np.float64).T
    rows = float(np.mean(logsumexp(logits, axis=1) - np.diag(logits)))
    columns = float(np.mean(logsumexp(logits, axis=0) - np.diag(logits)))
    assert abs(rows - columns) > 0.01  # the two directions differ on these pairs, so the test can tell
    logged = float(lines[0].split(" loss ")[1].split()[0])
    assert logged == pytest.approx((rows + columns) / 2, abs=2e-4)
