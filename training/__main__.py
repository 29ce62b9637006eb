"""`python -m training <command> [args]`: every offline step, each a module with `main(argv)`.

Command modules are imported only when their command runs, so that `--help` does not import torch.
"""
from __future__ import annotations

import importlib
import sys

from service.artifacts.manifest import ManifestError
from training.core.cli import SetupError, settle_made_folders
from training.core.staging import Terminated

# command -> (module with a `main(argv: list[str]) -> int`, what it does)
COMMANDS: dict[str, tuple[str, str]] = {
    "export-glove": ("training.baselines.glove", "GloVe 6B 50-d from its package into the store (glove-50d)"),
    "baselines": ("training.baselines.export", "manifests and cards of the untrained baselines"),
    "train-mh": ("training.mh.train", "fit M_H's regression of conversation proxies (ConvAI2)"),
    "selfplay": ("training.mh.selfplay", "bots talk to themselves; M_H scores the conversations"),
    "pretrain": ("training.encoders.hred.train", "BPE tokenizer and VHRED pre-training (ADEM's encoder)"),
    "selftalk": ("training.autojudge.selftalk", "VHRED continues sampled contexts (AutoJudge's data generation)"),
    "train": ("", "train adem | autojudge | ruber"),
    "export": ("training.export", "ONNX export of the VHRED encoder, ADEM and AutoJudge, with parity checks"),
    "evaluate": ("training.evaluation.evaluate", "every served model on every development set: docs/evaluation.md"),
    "figures": ("training.evaluation.figures", "docs/evaluation.json and the cards' dev figures again from the cards' evaluate entries"),
    "dev-items": ("training.evaluation.dev_items", "the items evaluate scores (split, recovered references) as JSON lines"),
    "export-minilm": ("training.encoders.minilm.export", "MiniLM to ONNX (int8; --fp32 for GPU images, --w8a8 for CPUs)"),
    "reference-speed": ("training.encoders.minilm.reference_speed", "sentence-transformers' texts/s, for make bench"),
    "export-mpnet": ("training.encoders.mpnet.export", "all-mpnet-base-v2 from its hash-pinned wheels to ONNX (make encoder-mpnet)"),
    "train-minilm": ("training.train_minilm", "adem-minilm, ruber-minilm or autojudge-minilm"),
    "minilm-cosine": ("training.baselines.cosine", "the store folder of the untrained minilm-cosine"),
    "minilm-report": ("training.evaluation.minilm_report", "the -minilm models against their bars: docs and cards"),
    "degenerate": ("training.evaluation.degenerate", "degenerate replies against human ones, every model"),
    "trained-items": ("training.data.trained_items", "each learned model's training-item keys into its store folder"),
    "train-unref": ("training.unref.train", "unref-minilm(-commercial), unref-mpnet, unref-mpnet-minilm: stacked reference-free models"),
    "unref-scan": ("training.unref.scan", "which signals a stacked recipe combines, by leave-one-set-out on its train partitions"),
    "calibrate": ("training.calibration.calibrate", "human_percentile tables of the reference-free models, their checks"),
    "finetune-minilm": ("training.autojudge.finetune", "experiment: AutoJudge with MiniLM itself fine-tuned"),
    "pack-rerank": ("training.rerank.pack", "the MiniLM cross-encoder's training data, packed for one GPU call"),
    "train-rerank": ("training.rerank.train", "fine-tune the MiniLM cross-encoder on a pack, fold-wise (the GPU call)"),
    "export-rerank": ("training.rerank.export", "the GPU call's returned weights to an int8 ONNX store folder"),
}
# `train <model>`: model -> (its trainer's module, what it trains)
TRAINERS: dict[str, tuple[str, str]] = {
    "adem": ("training.adem.train",
             "ADEM's head on the frozen VHRED encoder, from human scores with references (Lowe et al. 2017)"),
    "autojudge": ("training.autojudge.train",
                  "AutoJudge's M on the frozen VHRED encoder, from turn ratings (Deriu & Cieliebak 2019)"),
    "ruber": ("training.ruber.train",
              "RUBER's unreferenced scorer by negative sampling, with calibration (Tao et al. 2018)"),
}


def usage(table: dict[str, tuple[str, str]], line: str, argv: list[str], unknown: str, width: int) -> int:
    """The table's names and what each does: on stdout for -h/--help (exit 0), else on stderr (exit 2)."""
    asked = bool(argv) and argv[0] in ("-h", "--help")
    out = sys.stdout if asked else sys.stderr
    if argv and not asked:
        print(f"error: unknown {unknown} {argv[0]!r}", file=out)
    print(line, file=out)
    for name, (_, what) in sorted(table.items()):
        print(f"  {name:{width}s} {what}", file=out)
    return 0 if asked else 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        return usage(COMMANDS, "usage: python -m training <command> [options]   (python -m training <command> "
                               "--help: its options)\n\ncommands:", argv, "command", 16)
    command, rest = argv[0], argv[1:]
    if command == "train":
        if not rest or rest[0] not in TRAINERS:
            return usage(TRAINERS, "usage: python -m training train {" + ",".join(sorted(TRAINERS))
                         + "} [options]\n", rest, "model", 10)
        module_name, rest = TRAINERS[rest[0]][0], rest[1:]
    else:
        module_name = COMMANDS[command][0]
    module = importlib.import_module(module_name)
    status = 1
    try:
        status = int(module.main(rest) or 0)
        return status
    except KeyboardInterrupt as exc:  # Ctrl-C (or SIGTERM while a store folder is built): one line
        print(f"\n{command}: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130  # the shell's 128 + the signal
    except ManifestError as exc:  # a store folder the command reads (glove-50d, hred-encoder) is missing or bad
        print(f"error: {command}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given on the command line (or its default) missing or not writable
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {command}: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except SetupError as exc:  # a corrupt checkpoint, a run of the wrong kind, a store export would break
        print(f"error: {command}: {exc}", file=sys.stderr)
        return 2
    finally:
        settle_made_folders(failed=status != 0)  # a failed or stopped run leaves no empty --out behind


if __name__ == "__main__":
    raise SystemExit(main())
