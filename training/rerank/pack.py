"""`python -m training pack-rerank`: everything the device's training call reads, in one folder to `carry`.

The judged sets' train and dev rows (ratings, set, leave-one-set-out group, context group for pairwise
agreement), next-turn groups of training/data/negatives.py (the human reply first, then its negatives),
optional fold-wise teacher scores, and each distinct text's word pieces once. The MiniLM weights do not
travel here: the device rebuilds them from the committed int8 graph (model.py).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.core.cli import count, input_file, output_dir, positive_int
from training.data import judgements
from training.data.negatives import negative_samples
from training.evaluation.pairwise import context_groups
from training.unref.heads import GROUPS
from training.rerank.pieces import CLS, PAD, SEP

PACK_FILE = "pack.npz"
INFO_FILE = "pack.json"
TOKENIZER = Path(__file__).resolve().parents[2] / "model_store" / "minilm-l6" / "tokenizer.json"
MAX_TURNS = 3  # context turns kept, the newest; the service's MAX_TURNS
MAX_PIECES = 64  # word pieces kept of each text: a pair is cut to the training length anyway
TRAVEL_LIMIT = 64 * 2**20  # the device tool's working tree, tracked files and carried paths together
ALL = "all"  # the teacher column of the model fitted on every group


@dataclass
class Rows:
    """Judged rows, or next-turn groups (replies a list per context, the human reply first)."""

    contexts: list[list[str]]
    replies: list[list[str]]
    meta: dict[str, list]


def judged_rows(limit: int | None) -> Rows:
    """Train rows of the training sets (the stacks' groups) and dev rows of every set."""
    rows = Rows([], [], {"score": [], "set": [], "split": [], "key": []})
    for split, names in (("train", tuple(GROUPS)), ("dev", tuple(judgements.SETS))):
        for name in names:
            for item in judgements.load_set(name, split)[:limit]:
                rows.contexts.append(list(item.context)[-MAX_TURNS:])
                rows.replies.append([item.response])
                rows.meta["score"].append(item.score)
                rows.meta["set"].append(name)
                rows.meta["split"].append(split)
                rows.meta["key"].append((name, item.conversation, tuple(item.context)))
    rows.meta["context_group"] = list(context_groups(rows.meta.pop("key")))
    return rows


def next_turn_groups(contexts: int, pairs: int, seed: int) -> Rows:
    """negatives.py's negative samples, regrouped per (context, human reply), the human reply first: its
    multi-reply contexts (degenerate kinds, an adversarial and a random negative: train-unref's) and RUBER's
    pairs, Reddit's human replies among them (a random, two adversarial where DailyDialog++ has them and a
    degenerate negative: ruber-minilm's with --reddit). No rating is read."""
    @dataclass
    class Options:
        reddit_positives: bool = True
        ruber_pairs: int = pairs
        ruber_degenerate: float = 1.0
        negatives_contexts: int = contexts

    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for for_ruber in (False, True):
        ranked = negative_samples(Options(), random.Random(seed), for_ruber=for_ruber)
        for context, good, bad in zip(ranked.contexts, ranked.good, ranked.bad):
            replies = groups.setdefault((tuple(context[-MAX_TURNS:]), good), [good])
            if bad not in replies:
                replies.append(bad)
    return Rows([list(c) for c, _ in groups], list(groups.values()), {})


def read_teacher(path: Path | None) -> tuple[list[str], dict[tuple[tuple[str, ...], str], dict[str, float]]]:
    """Teacher scores, a JSON line per (context, reply): {"context": [...], "reply": ..., "scores":
    {column: score}}, a column per leave-one-set-out group (the teacher fitted without it) and ALL."""
    if path is None:
        return [], {}
    scores: dict[tuple[tuple[str, ...], str], dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            scores[(tuple(record["context"][-MAX_TURNS:]), record["reply"])] = record["scores"]
    columns = sorted({c for s in scores.values() for c in s})
    return columns, scores


def tokenise(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Flat uint16 word pieces (no special tokens, at most MAX_PIECES a text) and their offsets."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if [tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")] != [CLS, SEP, PAD]:
        raise ValueError(f"{TOKENIZER}: special tokens are not pieces.py's")
    pieces = [e.ids[:MAX_PIECES] for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    offsets = np.zeros(len(pieces) + 1, np.int64)
    offsets[1:] = np.cumsum([len(p) for p in pieces])
    return np.fromiter((i for p in pieces for i in p), np.uint16, int(offsets[-1])), offsets


def pack(out: Path, judged: Rows, groups: Rows, teacher: tuple[list[str], dict], group_of: dict[str, str],
         counted: list[str], seed: int) -> dict:
    """Write PACK_FILE and INFO_FILE under `out`; returns the info."""
    index: dict[str, int] = {}

    def ids(texts: list[str], width: int) -> np.ndarray:
        row = [index.setdefault(t, len(index)) for t in texts][-width:]
        return np.array(row + [-1] * (width - len(row)), np.int32)

    empty = np.zeros((0, MAX_TURNS), np.int32)
    j_context = np.stack([ids(c, MAX_TURNS) for c in judged.contexts]) if judged.contexts else empty
    j_reply = np.array([index.setdefault(r[0], len(index)) for r in judged.replies], np.int32)
    width = max((len(r) for r in groups.replies), default=1)
    g_context = np.stack([ids(c, MAX_TURNS) for c in groups.contexts]) if groups.contexts else empty
    g_replies = np.full((len(groups.replies), width), -1, np.int32)
    for i, replies in enumerate(groups.replies):
        g_replies[i, :len(replies)] = [index.setdefault(r, len(index)) for r in replies]
    columns, scores = teacher
    j_teacher = np.full((len(j_reply), len(columns)), np.nan, np.float16)
    g_teacher = np.full((*g_replies.shape, len(columns)), np.nan, np.float16)
    for i, (context, replies) in enumerate(zip(judged.contexts, judged.replies)):
        found = scores.get((tuple(context), replies[0]), {})
        j_teacher[i] = [found.get(c, np.nan) for c in columns]
    for i, (context, replies) in enumerate(zip(groups.contexts, groups.replies)):
        for k, reply in enumerate(replies):
            found = scores.get((tuple(context), reply), {})
            g_teacher[i, k] = [found.get(c, np.nan) for c in columns]
    flat, offsets = tokenise(list(index))
    sets = sorted(set(judged.meta["set"]))
    folds = sorted({group_of[s] for s in sets if s in group_of})
    arrays = {"ids": flat, "offsets": offsets, "j_context": j_context, "j_reply": j_reply,
              "j_score": np.array(judged.meta["score"], np.float32),
              "j_set": np.array([sets.index(s) for s in judged.meta["set"]], np.int16),
              "j_train": np.array([s == "train" for s in judged.meta["split"]], bool),
              "j_context_group": np.array(judged.meta["context_group"], np.int32),
              "g_context": g_context, "g_replies": g_replies, "j_teacher": j_teacher, "g_teacher": g_teacher}
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / PACK_FILE, **arrays)
    info = {"sets": sets, "fold_of_set": {s: group_of[s] for s in sets if s in group_of}, "folds": folds,
            "counted_once": counted, "teacher_columns": columns, "max_turns": MAX_TURNS, "max_pieces": MAX_PIECES,
            "texts": len(index), "pieces": int(offsets[-1]), "judged_train": int(arrays["j_train"].sum()),
            "judged_dev": int((~arrays["j_train"]).sum()), "next_turn_groups": len(g_replies),
            "teacher_rows": int(np.isfinite(j_teacher).any(axis=1).sum() + np.isfinite(g_teacher).any(axis=2).sum()),
            "seed": seed, "sha256": hashlib.sha256((out / PACK_FILE).read_bytes()).hexdigest()}
    (out / INFO_FILE).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return info


def travel_bytes(repo: Path, carried: list[Path]) -> dict[str, int]:
    """What a device call sends from `repo`: its tracked files and untracked ones git does not ignore, and
    the carried paths (the device README's rule; ../shared does not travel)."""
    def listed(*args: str) -> int:
        names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", *args], check=True,
                               capture_output=True).stdout.decode().split("\0")
        return sum((repo / n).stat().st_size for n in names if n and (repo / n).is_file())

    carried_bytes = sum(p.stat().st_size for path in carried for p in ([path] if path.is_file() else path.rglob("*"))
                        if p.is_file())
    tracked, untracked = listed(), listed("--others", "--exclude-standard")
    return {"tracked": tracked, "untracked": untracked, "carried": carried_bytes,
            "total": tracked + untracked + carried_bytes, "limit": TRAVEL_LIMIT}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training pack-rerank", description=__doc__)
    parser.add_argument("--out", type=output_dir, default=Path("build/rerank-pack"))
    parser.add_argument("--multi-contexts", type=count, default=3000,
                        help="negatives.py's multi-reply contexts (train-unref's negatives_contexts)")
    parser.add_argument("--ruber-pairs", type=count, default=40000,
                        help="negatives.py's RUBER pairs (all of them: about 17k with Reddit's replies)")
    parser.add_argument("--max-judged", type=positive_int, default=None, help="rows per set and split (a quick pack)")
    parser.add_argument("--teacher", type=input_file, default=None, help="fold-wise teacher scores (read_teacher)")
    parser.add_argument("--seed", type=count, default=0)
    parser.add_argument("--repo", type=Path, default=Path("."), help="the checkout the device call sends")
    args = parser.parse_args(argv)
    started = time.time()
    judged = judged_rows(args.max_judged)
    groups = next_turn_groups(args.multi_contexts, args.ruber_pairs, args.seed)
    info = pack(args.out, judged, groups, read_teacher(args.teacher), GROUPS,
                judgements.counted_once(sorted(set(judged.meta["set"]))), args.seed)
    sizes = travel_bytes(args.repo, [args.out])
    print(json.dumps({k: v for k, v in info.items() if k != "fold_of_set"}))
    print(f"packed in {time.time() - started:.0f} s: {args.out / PACK_FILE} "
          f"{(args.out / PACK_FILE).stat().st_size / 2**20:.2f} MiB")
    mib = {k: round(v / 2**20, 2) for k, v in sizes.items()}
    print(f"travel (MiB): tracked {mib['tracked']} + untracked {mib['untracked']} + carried {mib['carried']} "
          f"= {mib['total']} of {mib['limit']}")
    if sizes["total"] > TRAVEL_LIMIT:
        print("error: the call would not travel; pack fewer --ruber-pairs or send a tree without model_store/ "
              "(a device call carries at most the limit above)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
