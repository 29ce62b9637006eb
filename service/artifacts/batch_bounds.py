"""Each model's batch bound, as GET /models states it: MARGIN times the largest move of a score with its
batch-mates, as a share of the model's score range, that `make bench` measured where its encoders run on
a provider that does not keep scores bit-exact (OpenVINO in bf16 or f32). 0 where the model is bit-exact
across batches; None where no bench has measured that provider and compute yet.

The measured figures live in batch_bounds.json, keyed by "<provider> <compute>", written by
`python -m benchmarks.bench --write-bounds` (each rounded up to two significant digits).
"""
from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

FIGURES = Path(__file__).with_name("batch_bounds.json")
# The largest move seen grows with the sets tried, so it is not itself a bound; the stated bound leaves
# room for sets bench did not try (docs/api.md gives the figures).
MARGIN = 4


@cache
def measured(path: Path = FIGURES) -> dict[str, dict[str, Any]]:
    """The committed figures: {"<provider> <compute>": {"machines": [...], "models": {name: bound}}}."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def key(components: list[dict[str, Any]]) -> str | None:
    """The provider and compute of a model's encoders (GET /models' components), or None without any."""
    keys = sorted({f"{c['provider']} {c.get('compute') or '-'}" for c in components if c.get("provider")})
    return ",".join(keys) or None


def bound(model: str, bit_exact: bool, components: list[dict[str, Any]]) -> float | None:
    if bit_exact:
        return 0.0
    seen = measured().get(key(components) or "", {}).get("models", {}).get(model)
    return None if seen is None else round_up(MARGIN * seen)


def round_up(value: float) -> float:
    """`value` rounded up to two significant digits (a bound, never below what was measured)."""
    if value <= 0:
        return 0.0
    scale = 10 ** (math.floor(math.log10(value)) - 1)
    return float(f"{math.ceil(value / scale - 1e-9) * scale:.2g}")


def record(where: str, machine: str, moves: dict[str, float], path: Path = FIGURES) -> None:
    """Merge `moves` (bench's batch_moves) into the figures of provider and compute `where`: per model the
    larger of the recorded and the new (another machine's or another run's sets may move scores more, and a
    bound must cover both), each machine listed once; other providers' figures are kept. A bound never
    shrinks here: to measure one anew, delete its provider's entry from the file first."""
    figures = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    old = figures.get(where, {"machines": [], "models": {}})
    models = dict(old["models"])
    for name, move in moves.items():
        models[name] = max(models.get(name, 0.0), round_up(move))
    machines = old["machines"] + [machine] * (machine not in old["machines"])
    figures[where] = {"machines": machines, "models": dict(sorted(models.items()))}
    path.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    measured.cache_clear()
