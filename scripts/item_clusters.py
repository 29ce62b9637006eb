"""Whether the item level's interval needs a bootstrap by context: docs/api.md's measure.

Several replies to one context share it, which items drawn as independent draws do not see. For each
development set where a context has more than one rated reply, and each of a length baseline and the
two reference-free MiniLM models, this prints the width of /correlate's 95% item-level interval of
Pearson's and Spearman's r with `item_resampling` items and with inputs (the contexts: every reply to
a drawn context), and their ratio (1,000 resamples, seed 0):
`python scripts/item_clusters.py` (the sets from DIALSCORE_DATA_DIR, the training loaders' folder).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from service.bulk.cli import load_scorers  # noqa: E402  (after the path above)
from service.config import load_server_settings  # noqa: E402
from service.scorers.base import Item  # noqa: E402
from service.stats import correlate  # noqa: E402
from training.data.judgements import SETS, load_set  # noqa: E402

MODELS = ("unref-minilm", "unref-minilm-commercial")  # reference-free: every set can be scored
MIN_REPLIES_A_CONTEXT = 1.5  # sets whose contexts average fewer replies than this have nothing to cluster
MAX_ITEMS = 1000  # dev items a set, for time: dstc7 has 3,400 (22 replies a context), the others fewer


def interval_widths(human: Sequence[float], metric: Sequence[float], clusters: Sequence[object],
                    resamples: int = 1000, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Per method (Pearson, Spearman), the width of /correlate's 95% item-level interval with
    `item_resampling` items and with inputs, `clusters` the inputs."""
    widths = {}
    for design in ("items", "inputs"):
        body = correlate(list(map(float, human)), {"m": list(map(float, metric))}, methods=["pearson", "spearman"],
                         resamples=resamples, seed=seed, inputs=[str(c) for c in clusters], item_resampling=design)
        for method, entry in body["metrics"]["m"]["item"].items():
            widths.setdefault(method, []).append(entry["ci"][1] - entry["ci"][0])
    return {method: (by_items, by_inputs) for method, (by_items, by_inputs) in widths.items()}


def main() -> None:
    scorers = load_scorers(REPO / "model_store", list(MODELS), load_server_settings(), threads=2)
    print("set, metric, items, contexts: width of the 95% interval by items / by contexts (ratio), Pearson; Spearman")
    for name in SETS:
        if SETS[name].alias_of is not None:  # the same items as another set, measured there
            continue
        items = load_set(name, "dev")[:MAX_ITEMS]
        contexts = {c: i for i, c in enumerate(dict.fromkeys("\n".join(item.context) for item in items))}
        if not items or len(items) / len(contexts) < MIN_REPLIES_A_CONTEXT:
            continue
        clusters = [contexts["\n".join(item.context)] for item in items]
        human = [item.score for item in items]
        batch = [Item(item.context, item.response) for item in items]
        metrics = {"length": [float(len(item.response.split())) for item in items]}
        metrics.update({scorer.name: scorer.score(batch).scores for scorer in scorers})
        for metric, values in metrics.items():
            widths = interval_widths(human, values, clusters)
            print(f"{name}, {metric}, {len(items)}, {len(contexts)}: " + "; ".join(
                f"{a:.3f} / {b:.3f} ({b / a:.2f})" for a, b in widths.values()), flush=True)


if __name__ == "__main__":
    main()
