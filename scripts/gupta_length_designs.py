"""docs/api.md's worked example of the system-level designs: response length against people's ratings.

dailydialog_gupta_multiref's 500 averaged ratings (100 contexts x 5 systems); the metric is a
response's length in tokens as the file holds them (whitespace-separated; the text is tokenised, so
punctuation marks count). Prints, per design, the system-level Spearman r, its interval and p with
its Monte Carlo standard error (1,000 resamples, seed 0): `python scripts/gupta_length_designs.py [DATA_DIR]` (default: the training
loaders' data folder, DIALSCORE_DATA_DIR).
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from service.stats import correlate  # noqa: E402  (after the path above)
from training.data.corpora import DEFAULT_DATA_DIR  # noqa: E402

RATINGS = Path("judgements") / "dailydialog_gupta_multiref" / "mturk_rating_processed_output.csv"
RUNS = (("items", False), ("systems", False), ("both", False), ("both", True))


def length_rows(data_dir: Path) -> tuple[list[float], list[float], list[str], list[str]]:
    """(human ratings, lengths in tokens, systems, contexts), one per rated response."""
    with open(data_dir / RATINGS, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return ([float(r["human_average_rating"]) for r in rows], [float(len(r["response"].split())) for r in rows],
            [r["model"] for r in rows], [r["context_id"] for r in rows])


def system_level(data_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    """(design label, system-level Spearman entry) for each design, with and without the contexts as inputs."""
    human, length, systems, contexts = length_rows(data_dir)
    out = []
    for design, by_inputs in RUNS:
        body = correlate(human, {"length": length}, systems, ["spearman"], resamples=1000, seed=0,
                         system_resampling=design, inputs=contexts if by_inputs else None)
        out.append((design + (" + inputs" if by_inputs else ""), body["metrics"]["length"]["system"]["spearman"]))
    return out


def main() -> None:
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA_DIR
    for label, entry in system_level(data_dir):
        ci = "none" if entry["ci"] is None else f"[{entry['ci'][0]:.2f}, {entry['ci'][1]:.2f}]"
        print(f"{label}: r {entry['r']:.2f}, interval {ci}, p {entry['p']:.3f} (Monte Carlo SE {entry['p_mc_se']:.3f})"
              + (" (at the floor 1/1001)" if entry.get("p_at_floor") else ""))


if __name__ == "__main__":
    main()
