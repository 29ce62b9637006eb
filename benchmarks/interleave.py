"""`python -m benchmarks.interleave TREE_A TREE_B [bench options]`: code against code on one machine.

Runs `python -m benchmarks.bench` in each checkout in turn, A B, B A, A B, ... (`--rounds`), so that
a load that drifts during the session falls on both alike, then prints each row's p50 per round and
the ratio of B's median to A's. Each tree serves its own code and model store; the rows compared are
those both served. docs/benchmarks.md: interleave, and note the load beside each figure.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_BENCH = ["--workers", "2", "--seconds", "1", "--latency-seconds", "8", "--encoder-texts", "0",
                 "--baseline", ""]


def order(rounds: int) -> list[int]:
    """Which tree (0: A, 1: B) runs at each step: A B, B A, A B, ..."""
    return [tree for r in range(rounds) for tree in ((0, 1) if r % 2 == 0 else (1, 0))]


def compare(runs_a: list[dict[str, dict]], runs_b: list[dict[str, dict]]) -> list[tuple[str, list, list, float]]:
    """(row, A's p50s, B's p50s, median B / median A) for every row with a p50 in every run of both."""
    rows = []
    for name in runs_a[0]:
        a = [run.get(name, {}).get("p50_ms") for run in runs_a]
        b = [run.get(name, {}).get("p50_ms") for run in runs_b]
        if all(a) and all(b):
            rows.append((name, a, b, statistics.median(b) / statistics.median(a)))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.interleave", description=__doc__.split("\n")[0])
    parser.add_argument("tree_a", type=Path)
    parser.add_argument("tree_b", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args, bench = parser.parse_known_args(argv)
    runs: tuple[list, list] = ([], [])
    with tempfile.TemporaryDirectory() as folder:
        for step, tree in enumerate(order(args.rounds)):
            path = (args.tree_a, args.tree_b)[tree]
            out, load, started = Path(folder) / f"{step}.json", os.getloadavg(), time.monotonic()
            subprocess.run([sys.executable, "-m", "benchmarks.bench", *DEFAULT_BENCH, *bench, "--json", str(out)],
                           cwd=path, check=True, stdout=subprocess.DEVNULL)
            runs[tree].append(json.loads(out.read_text())["runs"]["default"])
            print(f"{'AB'[tree]} {path}: load before {load[0]:.2f}, {time.monotonic() - started:.0f} s", flush=True)
    rows = compare(*runs)
    print(f"{'row':62s} {'A p50 ms':>22s} {'B p50 ms':>22s} {'B/A':>6s}")
    for name, a, b, ratio in rows:
        print(f"{name[:62]:62s} {' '.join(f'{x:6.1f}' for x in a):>22s} {' '.join(f'{x:6.1f}' for x in b):>22s} "
              f"{ratio:6.3f}")
    lone = [ratio for name, _, _, ratio in rows if name.startswith("one at a time:")]
    if lone:
        print(f"one-at-a-time rows: median B/A {statistics.median(lone):.3f} over {len(lone)} rows "
              f"(range {min(lone):.3f} to {max(lone):.3f})")
    print(f"load average after (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
