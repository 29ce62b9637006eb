"""`python -m training train <model> [options]`: dispatch to one model's trainer (`main(argv)`)."""
from __future__ import annotations

import importlib
import sys

TRAINERS: dict[str, str] = {
    "adem": "training.adem.train",
    "autojudge": "training.autojudge.train",
    "ruber": "training.ruber.train",
}


WHAT = {"adem": "ADEM's head on the frozen VHRED encoder, from human scores with references (Lowe et al. 2017)",
        "autojudge": "AutoJudge's M on the frozen VHRED encoder, from turn ratings (Deriu & Cieliebak 2019)",
        "ruber": "RUBER's unreferenced scorer by negative sampling, with calibration (Tao et al. 2018)"}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TRAINERS:
        asked = bool(argv) and argv[0] in ("-h", "--help")
        out = sys.stdout if asked else sys.stderr
        if argv and not asked:
            print(f"error: unknown model {argv[0]!r}", file=out)
        print("usage: python -m training train {" + ",".join(sorted(TRAINERS)) + "} [options]\n", file=out)
        for name in sorted(TRAINERS):
            print(f"  {name:10s} {WHAT[name]}", file=out)
        return 0 if asked else 2
    module = importlib.import_module(TRAINERS[argv[0]])
    return int(module.main(argv[1:]) or 0)
