"""autojudge-minilm: AutoJudge's reference-free c^T M r on MiniLM vectors (Deriu & Cieliebak 2019), scored
as alpha + beta (c^T M r - copy penalty) with alpha and beta trained (its card says why)."""
from __future__ import annotations

from service.scorers.heads import SentenceHeadScorer


class AutoJudgeMiniLM(SentenceHeadScorer):
    computes = "unreferenced"
    bounded_by_squashing = True
