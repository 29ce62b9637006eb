"""`python -m training minilm-cosine`: write the store folder of the untrained minilm-cosine baseline."""
from __future__ import annotations

import argparse
from pathlib import Path

from training.minilm.store import write_minilm_cosine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training minilm-cosine", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("model_store/minilm-cosine"))
    args = parser.parse_args(argv)
    write_minilm_cosine(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
