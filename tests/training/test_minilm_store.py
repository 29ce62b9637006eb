"""MiniLM store folders: the README is re-derived from the manifest's card on every card change."""
from __future__ import annotations

from service.manifest import read_manifest
from tests.conftest import copy_store
from training.evaluation_cards import BEGIN, END
from training.minilm.store import update_card


def test_a_card_change_keeps_the_section_evaluate_wrote(tmp_path) -> None:
    """minilm-report and degenerate rewrite the README after `evaluate` ran (make train's order)."""
    store = copy_store(tmp_path, ("minilm-cosine", "autojudge-minilm"))
    cosine = store / "minilm-cosine"
    entry = read_manifest(cosine).card["evaluate"]
    update_card(cosine, degenerate={"empty": 0.5})
    text = (cosine / "README.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text and "- empty: 50.0%" in text
    dstc7 = entry["item_level"]["dstc7"]
    assert f"| dstc7 | {dstc7['n']} | {dstc7['pearson']:.3f} |" in text
    # a trained head's README has its own correlation table; evaluate's is not repeated there
    update_card(store / "autojudge-minilm", degenerate={"empty": 0.5})
    assert BEGIN not in (store / "autojudge-minilm" / "README.md").read_text(encoding="utf-8")
