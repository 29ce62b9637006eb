"""`python -m training degenerate`: degenerate replies against human ones, every served model.

On held-out DailyDialog++ dev contexts, one degenerate reply of each kind (CHECK_KINDS) against a human reply of the
same context; the share scored below the human one goes into docs/evaluation.md and every card."""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from service.artifacts.manifest import update_card as update_manifest_card
from training.core.command_line import command_line
from service.scorers.base import EncodeCache, Item
from training.core.card import DEGENERATE_BEGIN, DEGENERATE_END, degenerate_section, write_measured_section
from training.core.cli import check_output_file, positive_int
from training.core.docs_section import write_section
from training.data.holdout import DevHoldout
from training.data.judgements import query_key, split_of
from training.evaluation.evaluate import default_specs, load_store, scorer_of
from training.evaluation.held_in import seen_in_training, trained_text
from training.evaluation.vectors import SharedVectors
from training.core.turn_cards import FROM_MANIFEST, update_card
from training.data.negatives import dd_plusplus
from training.data.degenerate import (CHECK_GENERIC, CHECK_KINDS, CHECK_NEAR_EMPTY, SHUFFLED_KIND, TOPIC_WORD_TIMES,
                                     degenerate_replies, repetition_replies, shuffled_copy)


# --- the check set and `python -m training degenerate` ---------------------------------------------
@dataclass(frozen=True)
class Case:
    """A held-out context with its human reply, a reference (another human reply) and one degenerate reply."""

    context: tuple[str, ...]
    human: str
    reference: str
    kind: str
    degenerate: str


def check_set(max_contexts: int = 400, seed: int = 0, trained: DevHoldout | None = None) -> list[Case]:
    """DailyDialog++ dev/test contexts whose query is in the judgement *dev* partition (never trained on)
    and not held by any -minilm training stream under another spelling (`seen_in_training`).

    The human reply and the reference are two of the five human-written replies; the reply from
    another conversation is DailyDialog++'s own random negative for that context.
    """
    rng = random.Random(seed)
    cases: list[Case] = []
    records = [r for name in ("dev.json", "test.json") for r in dd_plusplus(name)]
    trained = trained_text() if trained is None else trained
    contexts = 0
    for record in records:
        context = [" ".join(t.split()) for t in record["context"]]
        positives = [" ".join(p.split()) for p in record["positive_responses"] if p.strip()]
        if len(positives) < 2 or split_of(query_key(context)) != "dev":
            continue
        if seen_in_training(trained, context, positives[:2]):
            continue
        other = " ".join(record["random_negative_responses"][0].split())
        replies = {**degenerate_replies(context, positives[0], other, rng), **repetition_replies(context),
                   SHUFFLED_KIND: shuffled_copy(context)}
        for kind, reply in replies.items():
            cases.append(Case(tuple(context), positives[0], positives[1], kind, reply))
        contexts += 1
        if contexts >= max_contexts:
            break
    return cases


def shares(scorer, cases: list[Case], batch: int = 256, caches: Callable[[], EncodeCache] = EncodeCache,
           ) -> dict[str, float]:
    """Per kind (and "all"): the share of cases where the degenerate reply scores below the human one."""
    human_items = [Item(list(c.context), c.human, c.reference) for c in cases]
    bad_items = [Item(list(c.context), c.degenerate, c.reference) for c in cases]
    scores = []
    for items in (human_items, bad_items):
        values: list[float] = []
        for start in range(0, len(items), batch):
            values.extend(scorer.score(items[start:start + batch], None, caches()).scores)
        scores.append(np.asarray(values))
    below = scores[1] < scores[0]  # a tie is a failure: the metric did not prefer the human reply
    result = {kind: float(below[[c.kind == kind for c in cases]].mean()) for kind in CHECK_KINDS}
    result["all"] = float(below.mean())
    return result


BEGIN, END = "<!-- degenerate:begin -->", "<!-- degenerate:end -->"


def markdown(table: dict[str, dict[str, float]], n_contexts: int, command: str) -> str:
    lines = [BEGIN,
             f"Share of cases where the degenerate reply scores **below** the human reply of the same context "
             f"(ties count as failures). {n_contexts} held-out DailyDialog++ dev/test contexts (query in the "
             "judgement dev partition, never used in training, nor held by a training stream under another spelling), one degenerate reply of each kind per context; "
             "referenced models get another human reply as the reference. Kinds: empty (\"\"), near-empty "
             f"({', '.join(repr(x) for x in CHECK_NEAR_EMPTY)}), repeated (the human reply's first three words "
             f"five times), generic ({', '.join(repr(x) for x in CHECK_GENERIC)}), copy of the last context "
             "turn, a human reply from another conversation, the last context turn said twice and three times "
             f"(near-copy-x2, -x3), its longest content word said {TOPIC_WORD_TIMES} times (topic-word), its words "
             "in another order (shuffled-copy, the order seeded by the turn's text). The "
             "-minilm models were trained with negatives of the first six kinds but other phrases "
             "(training/data/degenerate.py) on train contexts only; the -commercial models' negatives hold "
             "copies, the three repetition kinds and shuffled copies of DSTC7 train contexts (one sentence of "
             "the last turn, a random content word); the three stacked unref- models' hold those beside "
             "their own.", "",
             "| model | " + " | ".join(CHECK_KINDS) + " | all |", "|---|" + "---|" * (len(CHECK_KINDS) + 1)]
    for model, row in table.items():
        lines.append(f"| {model} | " + " | ".join(f"{row[k]:.1%}" for k in (*CHECK_KINDS, "all")) + " |")
    lines += ["", f"Command: `{command}`", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training degenerate", description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--contexts", type=positive_int, default=400)
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown file whose degenerate section is rewritten (default: docs/evaluation.md for "
                             "a full run; with --models or another --contexts than 400 the table is printed instead)")
    parser.add_argument("--no-cards", action="store_true", help="do not write the shares into the models' cards")
    parser.add_argument("--vectors", type=Path, nargs="+", default=[],
                        help="embedding caches to take sentence vectors from where the served graph made them on "
                             "the same provider and precision (as evaluate's --vectors: the same shares, faster)")
    args = parser.parse_args(argv)
    if args.contexts < 1:
        parser.error("--contexts must be at least 1")
    full_set = args.contexts == parser.get_default("contexts")
    out = args.out or (Path("docs/evaluation.md") if full_set and args.models is None else None)
    check_output_file(parser, "--out", out)  # written after minutes of scoring
    store = load_store(args.store, args.models, strict=True)
    cases = check_set(args.contexts)
    shared = SharedVectors(store, args.vectors)
    table: dict[str, dict[str, float]] = {}
    for name in args.models or default_specs(store):
        scorer = scorer_of(store, name)
        if scorer.kind == "dialogue":
            if args.models is not None:  # named, so say why it has no row (an empty table read as a pass)
                print(f"{name}: left out: the check scores replies, and {name} is a dialogue model", file=sys.stderr)
            continue
        started = time.time()
        table[name] = shares(scorer, cases, caches=shared.cache)
        print(f"{name}: {table[name]['all']:.1%} ({time.time() - started:.0f} s)", flush=True)
    command = command_line("python -m training degenerate", argv if argv is not None else sys.argv[2:])
    section = markdown(table, len(cases) // len(CHECK_KINDS), command)
    if out is None:
        print(section, end="")
    else:
        write_section(out, section, BEGIN, END)
    if not args.no_cards and full_set:  # a card reports the whole check set only
        for name, row in table.items():
            rounded = {k: round(v, 4) for k, v in row.items()}
            if name in FROM_MANIFEST:  # a README rendered from its manifest: rendered again
                update_card(args.store / name, degenerate=rounded)
            elif (args.store / name / "manifest.json").is_file():  # README written by its trainer: a section
                update_manifest_card(args.store / name, degenerate=rounded)
                write_measured_section(args.store / name, degenerate_section(rounded), DEGENERATE_BEGIN,
                                       DEGENERATE_END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
